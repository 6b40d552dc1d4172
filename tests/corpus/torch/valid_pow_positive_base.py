# covers: unguarded-domain
import torch.nn as nn


class LearnedCompression(nn.Module):
    def __init__(self, init: float = 0.3):
        super().__init__()
        self.init = init

    def forward(self, spec, exponent):
        return (spec.abs() + 1e-6) ** exponent
