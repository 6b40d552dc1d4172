"""Generalized-mean (GeM) pooling head for image retrieval (Radenovic et al., 2018).

Here it pools the output of a backbone whose last stage has no ReLU, so features can be
negative.
"""

import torch
from torch import nn


class GeMHead(nn.Module):
    def __init__(
        self, channels: int = 8, embed_dim: int = 4, p: float = 3.0, eps: float = 1e-6
    ) -> None:
        super().__init__()
        self.p = p
        self.eps = eps
        self.whiten = nn.Linear(channels, embed_dim)

    def gem(self, x: torch.Tensor) -> torch.Tensor:
        pooled = x.pow(self.p).mean(dim=(-2, -1))
        return pooled.pow(1.0 / self.p)  # numcheck-bug: pow

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        # features: [batch, channels, height, width]
        return self.whiten(self.gem(features))
