import torch.nn as nn


class TemperatureScaling(nn.Module):
    """Post-hoc calibration: the temperature arrives as a tensor from the caller."""

    def __init__(self, base: nn.Module):
        super().__init__()
        self.base = base

    def forward(self, x, temperature):
        logits = self.base(x)
        return logits / temperature  # expect: div/unguarded-domain
