"""Single-head graph attention layer (GAT-style scaled dot product over neighbours)."""

import math

import torch
from torch import nn


class NeighborAttention(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x: torch.Tensor, adjacency: torch.Tensor) -> torch.Tensor:
        # x: [nodes, dim]; adjacency: [nodes, nodes] bool, True where j is a neighbour of i
        scores = self.query(x) @ self.key(x).t() * self.scale
        # an isolated node masks its whole row: fill with the most negative finite value
        # (softmax stays defined) and zero the row afterwards
        scores = scores.masked_fill(~adjacency, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1)
        attn = attn * adjacency.any(dim=-1, keepdim=True)
        return attn @ self.value(x)
