"""Bilinear pooling head for fine-grained classification (Lin et al., 2015).

Second-order statistics of ReLU features are passed through the signed square root and an
L2 normalisation before the linear classifier.
"""

import torch
import torch.nn.functional as F
from torch import nn


class BilinearPoolingHead(nn.Module):
    def __init__(self, channels: int = 8, num_classes: int = 5) -> None:
        super().__init__()
        self.classifier = nn.Linear(channels * channels, num_classes)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        # features: [batch, channels, height, width], backbone output before its last ReLU
        x = F.relu(features)
        b, c, h, w = x.shape
        x = x.reshape(b, c, h * w)
        phi = torch.bmm(x, x.transpose(1, 2)) / (h * w)
        phi = phi.reshape(b, c * c)
        phi = torch.sign(phi) * torch.sqrt(torch.abs(phi) + 1e-10)
        phi = F.normalize(phi, dim=1)
        return self.classifier(phi)
