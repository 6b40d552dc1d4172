import torch
from torch import Tensor


def speed(velocity: Tensor) -> Tensor:
    """nan_to_num repairs the forward value; the gradient of sqrt at 0 is still inf."""
    return torch.nan_to_num(torch.sqrt((velocity ** 2).sum(-1)), nan=0.0)  # expect: sqrt/unguarded-domain
