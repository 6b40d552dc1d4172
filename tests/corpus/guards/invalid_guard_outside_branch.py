import torch
from torch import Tensor


def normalise_by_scale(x: Tensor, scale: Tensor, gain: float) -> Tensor:
    """The positivity check only covers the body of the if."""
    if (scale > 0).all():
        scale = scale * gain
    return x / scale  # expect: div/unguarded-domain
