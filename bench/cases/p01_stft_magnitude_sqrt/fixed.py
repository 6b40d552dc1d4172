"""Log-magnitude spectral loss for a neural vocoder (multi-resolution STFT style).

The spectra arrive as separate real and imaginary parts, shape [batch, frames, bins], as
produced by a learned Fourier front end.
"""

import torch
from torch import nn


class LogMagnitudeLoss(nn.Module):
    """Mean L1 distance between log-compressed magnitude spectra."""

    def __init__(self, log_floor: float = 1e-5) -> None:
        super().__init__()
        self.log_floor = log_floor

    def magnitude(self, real: torch.Tensor, imag: torch.Tensor) -> torch.Tensor:
        # sqrt has an infinite derivative at 0 (silent bins): clamp the power first.
        mag = torch.sqrt(torch.clamp(real**2 + imag**2, min=1e-7))
        return mag

    def forward(
        self,
        pred_real: torch.Tensor,
        pred_imag: torch.Tensor,
        target_real: torch.Tensor,
        target_imag: torch.Tensor,
    ) -> torch.Tensor:
        pred_mag = self.magnitude(pred_real, pred_imag)
        target_mag = self.magnitude(target_real, target_imag)
        log_pred = torch.log(pred_mag.clamp_min(self.log_floor))
        log_target = torch.log(target_mag.clamp_min(self.log_floor))
        return (log_pred - log_target).abs().mean()
