import torch
from torch import Tensor


def per_class_accuracy(correct: Tensor, count: Tensor) -> Tensor:
    """Classes absent from the batch are masked in the forward pass only."""
    return torch.where(count > 0, correct / count, torch.zeros_like(correct))  # expect: div/where-grad-leak
