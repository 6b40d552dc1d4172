import torch as t
from torch import log, sqrt


def rbf_kernel(a: t.Tensor, b: t.Tensor) -> t.Tensor:
    """Laplacian kernel on Euclidean distances between two point sets."""
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    dist = sqrt(sq)  # expect: sqrt/unguarded-domain
    return t.exp(-dist)


def log_scale(scale: t.Tensor) -> t.Tensor:
    return log(scale)  # expect: log/unguarded-domain


def inverse_sqrt(x: t.Tensor) -> t.Tensor:
    return t.rsqrt(x)  # expect: rsqrt/unguarded-domain
