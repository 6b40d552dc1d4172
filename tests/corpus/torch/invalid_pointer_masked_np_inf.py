import numpy as np
import torch
import torch.nn as nn


class PointerAttention(nn.Module):
    """Pointer network decoder step: visited nodes cannot be chosen again."""

    def __init__(self, dim: int):
        super().__init__()
        self.w_q = nn.Linear(dim, dim, bias=False)
        self.w_k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, 1, bias=False)

    def forward(self, query, keys, visited):
        scores = self.v(torch.tanh(self.w_q(query).unsqueeze(1) + self.w_k(keys))).squeeze(-1)
        scores = scores.masked_fill(visited, -np.inf)
        return torch.softmax(scores, dim=-1)  # expect: softmax/masked-softmax-inf
