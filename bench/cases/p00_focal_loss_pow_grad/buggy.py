"""Sigmoid focal loss for dense detection (Lin et al., 2017), multi-label form."""

import torch
import torch.nn.functional as F
from torch import nn


class SigmoidFocalLoss(nn.Module):
    def __init__(self, alpha: float = 0.25, gamma: float = 2.0) -> None:
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # logits: [anchors, classes]; labels: [anchors, classes] bool
        targets = labels.to(logits.dtype)
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        modulating = (1.0 - p_t) ** self.gamma  # numcheck-bug: pow
        alpha_t = self.alpha * targets + (1 - self.alpha) * (1 - targets)
        return (alpha_t * modulating * ce).mean()
