# covers: where-grad-leak
import torch
from torch import Tensor


def safe_log(x: Tensor) -> Tensor:
    return torch.where(x > 0, torch.log(torch.where(x > 0, x, torch.ones_like(x))), torch.zeros_like(x))
