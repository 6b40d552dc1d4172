# covers: log1p
import torch
import torch.nn.functional as F
from torch import Tensor


def msle_loss(pred: Tensor, target: Tensor) -> Tensor:
    return F.mse_loss(torch.log1p(pred.clamp(min=0)), torch.log1p(target.clamp(min=0)))


def log_counts(counts: Tensor) -> Tensor:
    return torch.log1p(torch.relu(counts))
