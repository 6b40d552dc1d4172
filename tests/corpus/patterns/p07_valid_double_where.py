# covers: where-grad-leak
import torch
from torch import Tensor


def log_magnitude(spec: Tensor) -> Tensor:
    mag = spec.abs()
    safe = torch.log(torch.where(mag > 0, mag, torch.ones_like(mag)))
    return torch.where(mag > 0, safe, torch.zeros_like(mag))
