"""Residual MLP block with a hand-written ELU, applied to an un-normalised residual stream."""

import torch
from torch import nn


class ResidualELUBlock(nn.Module):
    def __init__(self, dim: int = 16, hidden: int = 32, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def elu(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.where(x > 0, x, self.alpha * torch.expm1(x))  # numcheck-bug: expm1
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [batch, dim] residual stream; activations of a few hundred are common
        h = self.elu(x)
        h = self.fc2(torch.relu(self.fc1(h)))
        return x + h
