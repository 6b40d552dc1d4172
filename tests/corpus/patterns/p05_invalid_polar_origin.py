import torch
from torch import Tensor


def to_polar(xy: Tensor) -> Tensor:
    """Cartesian offsets to (radius, angle); the origin is a valid input."""
    x, y = xy[..., 0], xy[..., 1]
    r = torch.sqrt(x ** 2 + y ** 2)  # expect: sqrt/unguarded-domain
    theta = torch.atan2(y, x)
    return torch.stack([r, theta], dim=-1)
