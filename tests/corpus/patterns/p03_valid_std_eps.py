# covers: unguarded-domain
import torch
from torch import Tensor


def normalize_advantages(advantages: Tensor) -> Tensor:
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


def standardize_per_sample(x: Tensor) -> Tensor:
    mean = x.mean(dim=1, keepdim=True)
    std = torch.std(x, dim=1, keepdim=True, unbiased=False).clamp_min(1e-5)
    return (x - mean) / std
