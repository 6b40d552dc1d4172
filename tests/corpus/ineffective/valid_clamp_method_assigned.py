# covers: discarded-guard
import torch
import torch.nn as nn


class LogVarianceHead(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.var = nn.Linear(dim, 1)

    def forward(self, h):
        var = self.var(h)
        var = var.clamp(min=1e-6)
        return torch.log(var)
