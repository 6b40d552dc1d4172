# covers: unguarded-domain, manual-normalize
"""BatchNorm1d and weight-standardised convolution re-implemented from the papers."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ScratchBatchNorm1d(nn.Module):
    def __init__(self, num_features: int, momentum: float = 0.1):
        super().__init__()
        self.momentum = momentum
        self.gamma = nn.Parameter(torch.ones(num_features))
        self.beta = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        if self.training:
            mean = x.mean(dim=0)
            var = x.var(dim=0, unbiased=False)
            with torch.no_grad():
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var)
        else:
            mean = self.running_mean
            var = self.running_var.clamp(min=0.0)
        x_hat = (x - mean) * torch.rsqrt(var + 1e-5)
        return self.gamma * x_hat + self.beta


class WSConv2d(nn.Conv2d):
    """Weight standardisation (Qiao et al.): zero-mean, unit-std filters."""

    def forward(self, x):
        w = self.weight
        mean = w.mean(dim=(1, 2, 3), keepdim=True)
        std = w.std(dim=(1, 2, 3), keepdim=True, unbiased=False)
        w = (w - mean) / (std + 1e-5)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)


def cosine_classifier(features: torch.Tensor, prototypes: torch.Tensor, scale: float = 16.0) -> torch.Tensor:
    f = F.normalize(features, dim=-1, eps=1e-6)
    p = F.normalize(prototypes, dim=-1, eps=1e-6)
    return scale * f @ p.t()
