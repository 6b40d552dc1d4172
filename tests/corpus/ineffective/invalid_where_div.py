import torch
from torch import Tensor


def safe_ratio(num: Tensor, den: Tensor) -> Tensor:
    """The forward pass is clean; the backward pass still divides by 0."""
    return torch.where(den != 0, num / den, torch.zeros_like(num))  # expect: div/where-grad-leak
