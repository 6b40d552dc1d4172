# covers: unguarded-domain
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GaussianHead(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.out = nn.Linear(dim, 2)

    def forward(self, h, y):
        mu, raw_std = self.out(h).unbind(-1)
        std = F.softplus(raw_std) + 1e-5
        z = (y - mu) / std
        nll = 0.5 * z ** 2 + torch.log(std) + 0.5 * math.log(2 * math.pi)
        return nll.mean()
