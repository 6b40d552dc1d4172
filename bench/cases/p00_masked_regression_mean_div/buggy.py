"""Per-timestep regression head with a padding mask (masked mean squared error)."""

import torch
from torch import nn


class MaskedRegressionHead(nn.Module):
    def __init__(self, in_features: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(in_features, 1)

    def forward(
        self, features: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        # features: [batch, steps, in_features]; targets: [batch, steps];
        # mask: [batch, steps] bool, False on padding
        pred = self.proj(features).squeeze(-1)
        weight = mask.to(pred.dtype)
        squared_error = (pred - targets) ** 2 * weight
        loss = squared_error.sum() / weight.sum()  # numcheck-bug: div
        return loss
