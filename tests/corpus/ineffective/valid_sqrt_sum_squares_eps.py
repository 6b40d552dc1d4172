# covers: unguarded-domain
import torch
from torch import Tensor


def flow_magnitude(flow: Tensor) -> Tensor:
    u, v = flow[:, 0], flow[:, 1]
    return torch.sqrt(u ** 2 + v ** 2 + 1e-8)
