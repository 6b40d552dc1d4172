import torch
from torch import Tensor


def log_scale_features(x: Tensor) -> Tensor:
    """The guard only checks that SOME value is positive."""
    if (x > 0).any():
        return torch.log(x)  # expect: log/unguarded-domain
    return torch.zeros_like(x)
