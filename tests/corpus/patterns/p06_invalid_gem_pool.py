import torch.nn as nn
import torch.nn.functional as F


class GeM(nn.Module):
    """Generalised-mean pooling for image retrieval."""

    def __init__(self, p: float = 3.0):
        super().__init__()
        self.p = p

    def forward(self, x):
        pooled = F.avg_pool2d(x.pow(self.p), (x.size(-2), x.size(-1)))  # expect: pow/unguarded-domain
        return pooled.pow(1.0 / self.p)  # expect: pow/unguarded-domain
