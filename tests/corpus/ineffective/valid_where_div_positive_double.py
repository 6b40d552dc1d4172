# covers: where-grad-leak
import torch
from torch import Tensor


def per_class_accuracy(correct: Tensor, count: Tensor) -> Tensor:
    safe_count = torch.where(count > 0, count, torch.ones_like(count))
    return torch.where(count > 0, correct / safe_count, torch.zeros_like(correct))
