"""Log-sum-exp pooling of class activation maps for weakly supervised localisation.

LSE pooling (Pinheiro & Collobert, 2015) interpolates between average pooling (r -> 0) and
max pooling (r -> inf).
"""

import math

import torch
from torch import nn


class LSEPool(nn.Module):
    def __init__(self, r: float = 5.0) -> None:
        super().__init__()
        self.r = r

    def forward(self, cams: torch.Tensor) -> torch.Tensor:
        # cams: [batch, classes, height, width] class activation maps (logit scale)
        flat = cams.flatten(start_dim=2)
        lse = torch.logsumexp(self.r * flat, dim=-1) - math.log(flat.shape[-1])
        pooled = lse / self.r
        return pooled
