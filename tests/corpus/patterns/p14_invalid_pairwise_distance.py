import torch
from torch import Tensor


def prototype_distances(x: Tensor, prototypes: Tensor) -> Tensor:
    """Prototypical networks: Euclidean distance to each class prototype."""
    diff = x.unsqueeze(1) - prototypes.unsqueeze(0)
    return torch.sqrt(torch.sum(diff ** 2, dim=-1))  # expect: sqrt/unguarded-domain


def chamfer_distance(a: Tensor, b: Tensor) -> Tensor:
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return sq.min(dim=1).values.sqrt().mean()  # expect: sqrt/unguarded-domain
