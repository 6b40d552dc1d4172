# covers: unguarded-domain
import torch
from torch import Tensor


def log_scale_features(x: Tensor) -> Tensor:
    """Log features when every value is positive, signed log1p otherwise."""
    if (x > 0).all():
        return torch.log(x)
    return torch.sign(x) * torch.log1p(x.abs())
