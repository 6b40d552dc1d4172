# covers: eps-underflow-fp16
import torch
from torch import nn


class LayerNorm(nn.Module):
    """Runs under model.half(); the statistics are taken in float32, where 1e-8 exists."""

    def __init__(self, dim: int, eps: float = 1e-8) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        mu = xf.mean(dim=-1, keepdim=True)
        var = ((xf - mu) ** 2).mean(dim=-1, keepdim=True)
        return (self.weight.float() * (xf - mu) * torch.rsqrt(var + self.eps)).to(x.dtype)
