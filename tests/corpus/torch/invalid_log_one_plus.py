import torch
import torch.nn.functional as F
from torch import Tensor


def msle_loss(pred: Tensor, target: Tensor) -> Tensor:
    """Mean squared logarithmic error for count regression."""
    return F.mse_loss(torch.log(1 + pred), torch.log(1 + target))  # expect: log/log1p
