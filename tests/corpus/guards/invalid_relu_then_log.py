import torch
import torch.nn.functional as F
from torch import Tensor


def log_activation(x: Tensor) -> Tensor:
    """relu outputs exact zeros."""
    return torch.log(F.relu(x))  # expect: log/unguarded-domain
