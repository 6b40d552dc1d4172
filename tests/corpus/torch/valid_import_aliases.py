# covers: unguarded-domain
import torch as t
from torch import log, sqrt


def rbf_kernel(a: t.Tensor, b: t.Tensor) -> t.Tensor:
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    dist = sqrt(sq + 1e-12)
    return t.exp(-dist)


def log_scale(scale: t.Tensor) -> t.Tensor:
    return log(scale.clamp(min=1e-6))
