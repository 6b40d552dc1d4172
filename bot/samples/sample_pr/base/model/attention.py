import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.scale = 1 / math.sqrt(dim)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) * self.scale
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) @ v
