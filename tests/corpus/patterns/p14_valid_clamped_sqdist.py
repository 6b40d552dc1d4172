# covers: unguarded-domain
import torch
from torch import Tensor


def prototype_distances(x: Tensor, prototypes: Tensor) -> Tensor:
    diff = x.unsqueeze(1) - prototypes.unsqueeze(0)
    sq = torch.sum(diff ** 2, dim=-1)
    return torch.sqrt(sq.clamp(min=1e-12))


def chamfer_distance(a: Tensor, b: Tensor) -> Tensor:
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return sq.min(dim=1).values.clamp_min(1e-12).sqrt().mean()
