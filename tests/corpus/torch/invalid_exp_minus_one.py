import torch
import torch.nn as nn


class LogTargetRegressor(nn.Module):
    """Predicts log(1 + price) and maps the prediction back to prices."""

    def __init__(self, dim: int):
        super().__init__()
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        log_pred = self.head(x).squeeze(-1)
        return torch.exp(log_pred) - 1  # expect: exp/expm1
