import torch
from torch import Tensor


def rotation_angle(rot: Tensor) -> Tensor:
    """Angle of a rotation matrix; clamping to [-1, 1] still allows acos'(±1) = inf."""
    trace = rot[..., 0, 0] + rot[..., 1, 1] + rot[..., 2, 2]
    cos = (trace - 1) / 2
    return torch.acos(torch.clamp(cos, -1, 1))  # expect: acos/unguarded-domain
