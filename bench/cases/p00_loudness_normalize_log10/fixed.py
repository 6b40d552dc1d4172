"""Waveform preprocessing for a speech model: loudness normalisation and pre-emphasis."""

import torch
from torch import nn


class WaveformPreprocessor(nn.Module):
    def __init__(self, target_db: float = -20.0, preemphasis: float = 0.97) -> None:
        super().__init__()
        self.target_db = target_db
        self.preemphasis = preemphasis

    def loudness_normalize(self, wav: torch.Tensor) -> torch.Tensor:
        power = wav.pow(2).mean(dim=-1, keepdim=True)
        # a silent clip has power 0 and log10(0) = -inf: floor the power (-100 dB)
        db = 10.0 * torch.log10(power.clamp_min(1e-10))
        gain = 10.0 ** ((self.target_db - db) / 20.0)
        return wav * gain

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        # wav: [batch, samples] in [-1, 1]; silent clips are all zeros
        wav = self.loudness_normalize(wav)
        emphasized = torch.cat([wav[:, :1], wav[:, 1:] - self.preemphasis * wav[:, :-1]], dim=1)
        return emphasized.clamp(-1.0, 1.0)
