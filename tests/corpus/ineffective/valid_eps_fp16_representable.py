# covers: eps-underflow-fp16
import torch
from torch import Tensor


def weighted_mean(values: Tensor, weights: Tensor) -> Tensor:
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        w = weights.abs()
        return (values * w).sum(dim=-1) / (w.sum(dim=-1) + 1e-4)
