import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True))  # expect: rsqrt/unguarded-domain
        return x * rms * self.weight
