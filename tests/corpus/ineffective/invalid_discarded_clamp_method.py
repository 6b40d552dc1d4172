import torch
import torch.nn as nn


class LogVarianceHead(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.var = nn.Linear(dim, 1)

    def forward(self, h):
        var = self.var(h)
        var.clamp(min=1e-6)  # expect: clamp/discarded-guard
        return torch.log(var)  # expect: log/unguarded-domain
