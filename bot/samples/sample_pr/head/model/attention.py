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
        scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v


def angle(u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    cos = (u * w).sum(-1) / (u.norm(dim=-1) * w.norm(dim=-1)).clamp_min(1e-8)
    return torch.acos(cos.clamp(-1.0, 1.0))
