"""Power-of-two fake quantisation for quantisation-aware training (straight-through estimator)."""

import torch
from torch import nn


class PowerOfTwoFakeQuant(nn.Module):
    def __init__(self, bits: int = 8) -> None:
        super().__init__()
        self.bits = bits
        self.qmin = -(2 ** (bits - 1))
        self.qmax = 2 ** (bits - 1) - 1

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        # an all-zero tensor has max_abs = 0 and log2(0) = -inf: floor it
        max_abs = x.detach().abs().amax().clamp_min(1e-12)
        exponent = torch.ceil(torch.log2(max_abs))
        return torch.pow(2.0, exponent - (self.bits - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: a weight or activation tensor (a zero-initialised bias is all zeros)
        s = self.scale(x)
        q = torch.clamp(torch.round(x / s), self.qmin, self.qmax) * s
        return x + (q - x).detach()
