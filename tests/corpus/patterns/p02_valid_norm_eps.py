# covers: manual-normalize
import torch
from torch import Tensor


def unit_direction(v: Tensor) -> Tensor:
    return v / (v.norm(dim=-1, keepdim=True) + 1e-8)


def normalise_weight(w: Tensor) -> Tensor:
    return w / w.norm().clamp_min(1e-12)
