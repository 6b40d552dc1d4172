# covers: unguarded-domain
import torch.nn as nn
import torch.nn.functional as F


class GeM(nn.Module):
    def __init__(self, p: float = 3.0):
        super().__init__()
        self.p = p

    def forward(self, x):
        pooled = F.avg_pool2d(x.clamp(min=1e-6).pow(self.p), (x.size(-2), x.size(-1)))
        return pooled.clamp(min=1e-6).pow(1.0 / self.p)
