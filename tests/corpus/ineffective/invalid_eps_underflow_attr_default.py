import torch
from torch import nn


class LayerNorm(nn.Module):
    """Converted with model.half() for inference."""

    def __init__(self, dim: int, eps: float = 1e-8) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(dim=-1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
        return self.weight * (x - mu) * torch.rsqrt(var + self.eps)  # expect: rsqrt/eps-underflow-fp16
