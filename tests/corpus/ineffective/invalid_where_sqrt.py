import torch
from torch import Tensor


def edge_lengths(pos: Tensor, edges: Tensor) -> Tensor:
    """Bond lengths in a molecular graph; coincident atoms give d = 0."""
    d = ((pos[edges[0]] - pos[edges[1]]) ** 2).sum(-1)
    return torch.where(d > 0, torch.sqrt(d), torch.zeros_like(d))  # expect: sqrt/where-grad-leak
