import torch
from torch import Tensor


def to_polar(xy: Tensor) -> Tensor:
    """Cartesian offsets to (radius, angle): atan2 is guarded at the origin, the radius is not."""
    x, y = xy[..., 0], xy[..., 1]
    at_origin = (x == 0) & (y == 0)
    safe_x = torch.where(at_origin, torch.ones_like(x), x)
    r = torch.sqrt(x ** 2 + y ** 2)  # expect: sqrt/unguarded-domain
    theta = torch.atan2(y, safe_x)
    return torch.stack([r, theta], dim=-1)
