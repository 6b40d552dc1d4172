import torch
import torch.nn as nn


class SegmentationHead(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, kernel_size=1)
        self.crit = nn.BCELoss()

    def forward(self, features, mask):
        probs = torch.sigmoid(self.conv(features))
        loss = self.crit(probs, mask)  # expect: binary_cross_entropy/bce-sigmoid
        return probs, loss
