"""Poisson regression for count data (e.g. event counts per time bin) with the exact NLL."""

import torch
from torch import nn


class PoissonRegressor(nn.Module):
    def __init__(self, in_features: int = 5) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, 1)

    def nll(self, log_rate: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        y = counts.to(log_rate.dtype)
        log_factorial = torch.lgamma(y)  # numcheck-bug: lgamma
        return torch.exp(log_rate) - y * log_rate + log_factorial

    def forward(self, features: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        # features: [batch, in_features]; counts: [batch] non-negative integers
        log_rate = self.linear(features).squeeze(-1)
        return self.nll(log_rate, counts).mean()
