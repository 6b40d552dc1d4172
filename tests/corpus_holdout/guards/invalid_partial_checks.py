"""Validation that does not establish the domain: any() for all(), >= for >, all() in an early exit."""
import torch
from torch import Tensor


def evidential_kl(alpha: Tensor) -> Tensor:
    if (alpha > 0).any():
        total = alpha.sum(-1, keepdim=True)
        return (torch.digamma(alpha) - torch.digamma(total)).sum(-1)  # expect: digamma/unguarded-domain
    return alpha.new_zeros(alpha.shape[:-1])


def distance_from_sq(sq_dist: Tensor) -> Tensor:
    assert (sq_dist >= 0).all()
    return torch.sqrt(sq_dist)  # expect: sqrt/unguarded-domain


def log_volume(extent: Tensor) -> Tensor:
    if (extent <= 0).all():
        raise ValueError("degenerate box")
    return torch.log(extent).sum(-1)  # expect: log/unguarded-domain


def box_statistics(boxes: Tensor, centers: Tensor) -> dict:
    extent = boxes[:, 2:] - boxes[:, :2]
    sq = ((boxes[:, :2] - centers) ** 2).sum(-1)
    return {
        "log_volume": log_volume(extent),
        "center_dist": distance_from_sq(sq),
    }
