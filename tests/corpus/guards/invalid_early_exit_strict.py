import torch
from torch import Tensor


def log_intensity(x: Tensor) -> Tensor:
    """The early exit rejects negatives but lets exact zeros through."""
    if (x < 0).any():
        raise ValueError("negative intensities")
    return torch.log(x)  # expect: log/unguarded-domain
