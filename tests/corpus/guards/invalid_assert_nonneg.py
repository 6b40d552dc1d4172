import torch
from torch import Tensor


def precision_weighted(x: Tensor, var: Tensor) -> Tensor:
    """var >= 0 is asserted, but 0 is still a valid variance."""
    assert (var >= 0).all()
    weights = 1.0 / var  # expect: div/unguarded-domain
    return (weights * x).sum(dim=-1)
