# covers: bce-sigmoid
import torch
import torch.nn as nn


class SegmentationHead(nn.Module):
    def __init__(self, channels: int, pos_weight: float = 3.0):
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, kernel_size=1)
        self.crit = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([pos_weight]))

    def forward(self, features, mask):
        logits = self.conv(features)
        loss = self.crit(logits, mask)
        return torch.sigmoid(logits), loss
