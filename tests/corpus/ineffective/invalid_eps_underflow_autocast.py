import torch
from torch import Tensor


def weighted_mean(values: Tensor, weights: Tensor) -> Tensor:
    """1e-8 is 0.0 in float16, so under autocast the guard vanishes."""
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        w = weights.abs()
        return (values * w).sum(dim=-1) / (w.sum(dim=-1) + 1e-8)  # expect: div/eps-underflow-fp16
