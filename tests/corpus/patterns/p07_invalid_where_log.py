import torch
from torch import Tensor


def log_magnitude(spec: Tensor) -> Tensor:
    """Log-compressed spectrogram; silent frames are mapped to 0."""
    mag = spec.abs()
    return torch.where(mag > 0, torch.log(mag), torch.zeros_like(mag))  # expect: log/where-grad-leak
