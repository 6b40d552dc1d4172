# covers: where-grad-leak
import torch
from torch import Tensor


def edge_lengths(pos: Tensor, edges: Tensor) -> Tensor:
    d = ((pos[edges[0]] - pos[edges[1]]) ** 2).sum(-1)
    return torch.where(d > 0, torch.sqrt(d.clamp(min=1e-12)), torch.zeros_like(d))
