import torch.nn as nn


class LearnedCompression(nn.Module):
    """Learned power-law compression of spectrogram magnitudes."""

    def __init__(self, init: float = 0.3):
        super().__init__()
        self.init = init

    def forward(self, spec, exponent):
        return spec ** exponent  # expect: pow/unguarded-domain
