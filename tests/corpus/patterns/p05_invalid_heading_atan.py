import torch
from torch import Tensor


def heading(velocity: Tensor) -> Tensor:
    """Heading angle of agents; a parked agent has velocity (0, 0)."""
    vx = velocity[:, 0]
    vy = velocity[:, 1]
    return torch.atan(vy / vx)  # expect: div/unguarded-domain
