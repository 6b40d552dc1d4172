# covers: unguarded-domain
import torch
from torch import Tensor


def mean_pool(hidden: Tensor, lengths: Tensor) -> Tensor:
    """Mean over the valid positions of each sequence; callers drop empty sequences."""
    lengths = lengths.unsqueeze(-1).to(hidden.dtype)
    assert (lengths > 0).all()
    return hidden.sum(dim=1) / lengths
