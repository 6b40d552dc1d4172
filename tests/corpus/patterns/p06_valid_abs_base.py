# covers: unguarded-domain
import torch
from torch import Tensor


def signed_power(x: Tensor, alpha: float = 0.75) -> Tensor:
    """Power compression that keeps the sign, as in audio feature extraction."""
    return torch.sign(x) * (x.abs() + 1e-8) ** alpha


def charbonnier(pred: Tensor, target: Tensor) -> Tensor:
    return torch.sqrt((pred - target) ** 2 + 1e-6).mean()
