# covers: unguarded-domain
import torch
from torch import Tensor


def whiten(x: Tensor, var: Tensor) -> Tensor:
    """Whitening with a per-feature variance estimated elsewhere."""
    assert torch.all(var > 0)
    return x * torch.rsqrt(var)
