# covers: unguarded-domain
import torch
from torch import Tensor


def rbf(x: Tensor, y: Tensor) -> Tensor:
    return torch.exp(-((x - y) ** 2))


def laplace_weight(d: Tensor) -> Tensor:
    return torch.exp(-d.abs())


def bounded_gate(g: Tensor) -> Tensor:
    return torch.exp(torch.clamp(g, -10, 10))
