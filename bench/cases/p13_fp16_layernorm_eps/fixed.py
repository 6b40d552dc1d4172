"""Hand-written LayerNorm in a transformer that was converted with model.half()."""

import torch
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self, dim: int = 16, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [batch, tokens, dim] float16. 1e-8 is 0.0 in float16, so normalise in float32
        # with an epsilon float32 represents, and cast back
        xf = x.float()
        mu = xf.mean(dim=-1, keepdim=True)
        var = ((xf - mu) ** 2).mean(dim=-1, keepdim=True)
        x_hat = (xf - mu) / torch.sqrt(var + self.eps)
        return (self.weight.float() * x_hat + self.bias.float()).to(x.dtype)
