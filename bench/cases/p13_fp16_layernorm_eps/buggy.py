"""Hand-written LayerNorm in a transformer that was converted with model.half()."""

import torch
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self, dim: int = 16, eps: float = 1e-8) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [batch, tokens, dim] float16
        mu = x.mean(dim=-1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
        x_hat = (x - mu) / torch.sqrt(var + self.eps)  # numcheck-bug: div
        return self.weight * x_hat + self.bias
