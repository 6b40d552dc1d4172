"""Multi-label tagging head trained in half precision (model.half(), no autocast)."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiLabelHead(nn.Module):
    def __init__(self, in_features: int = 16, num_labels: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(in_features, in_features)
        self.classifier = nn.Linear(in_features, num_labels)

    def forward(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # features: [batch, in_features]; labels: [batch, num_labels] multi-hot
        hidden = F.gelu(self.proj(features)) + features
        logits = self.classifier(hidden)
        probs = torch.sigmoid(logits)
        targets = labels.to(probs.dtype)
        return F.binary_cross_entropy(probs, targets)  # numcheck-bug: binary_cross_entropy
