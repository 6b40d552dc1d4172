import torch
import torch.nn as nn


class ExpKernelAttention(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.qk = nn.Linear(dim, 2 * dim).half()

    def forward(self, x, v):
        q, k = self.qk(x.half()).chunk(2, dim=-1)
        scores = q @ k.transpose(-2, -1)
        weights = scores.exp()  # expect: exp/unguarded-domain
        return weights @ v.half()
