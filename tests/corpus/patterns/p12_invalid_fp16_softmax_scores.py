import math

import torch
import torch.nn.functional as F
from torch import nn


class HalfAttention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim).half()
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x.half()).chunk(3, dim=-1)
        attn = F.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)  # expect: softmax/fp16-scores-overflow
        return attn @ v


def scores_under_autocast(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    with torch.autocast("cuda", dtype=torch.float16):
        logits = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        return logits.softmax(dim=-1)  # expect: softmax/fp16-scores-overflow
