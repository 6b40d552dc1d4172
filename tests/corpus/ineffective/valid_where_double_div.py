# covers: where-grad-leak
import torch
from torch import Tensor


def safe_ratio(num: Tensor, den: Tensor) -> Tensor:
    safe_den = torch.where(den != 0, den, torch.ones_like(den))
    return torch.where(den != 0, num / safe_den, torch.zeros_like(num))
