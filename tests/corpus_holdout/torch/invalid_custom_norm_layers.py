"""Hand-written LayerNorm / RMSNorm / ELU used in a small research transformer."""
import torch
import torch.nn as nn


class ScratchLayerNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        std = torch.sqrt(var)  # expect: sqrt/unguarded-domain
        x_hat = (x - mean) / std  # expect: div/unguarded-domain
        return self.weight * x_hat + self.bias


class ScratchRMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True).clamp(min=1e-6)
        return self.scale * x * torch.rsqrt(ms)


class ScaledELU(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        neg = self.alpha * (torch.exp(torch.clamp(x, max=0.0)) - 1)  # expect: exp/expm1
        return torch.where(x > 0, x, neg)


class Block(nn.Module):
    def __init__(self, dim: int, use_rms: bool = False):
        super().__init__()
        self.norm = ScratchRMSNorm(dim) if use_rms else ScratchLayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), ScaledELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        return x + self.ff(self.norm(x))
