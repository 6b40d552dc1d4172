import torch
from torch import Tensor


def log_probability(p: Tensor) -> Tensor:
    """Clamping from above does nothing for log near 0."""
    p = p.clamp(max=1.0)
    return torch.log(p)  # expect: log/unguarded-domain
