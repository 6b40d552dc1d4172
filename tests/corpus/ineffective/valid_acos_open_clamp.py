# covers: unguarded-domain
import torch
from torch import Tensor


def rotation_angle(rot: Tensor) -> Tensor:
    trace = rot[..., 0, 0] + rot[..., 1, 1] + rot[..., 2, 2]
    cos = (trace - 1) / 2
    return torch.acos(torch.clamp(cos, -1 + 1e-6, 1 - 1e-6))
