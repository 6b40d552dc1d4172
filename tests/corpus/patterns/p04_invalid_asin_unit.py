import torch
from torch import Tensor


def elevation_angle(directions: Tensor) -> Tensor:
    """Elevation of unit view directions; z is assumed to lie in [-1, 1]."""
    z = directions[..., 2]
    return torch.asin(z)  # expect: asin/unguarded-domain
