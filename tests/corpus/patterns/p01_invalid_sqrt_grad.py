import torch
import torch.nn as nn


class TripletDistanceLoss(nn.Module):
    """Triplet margin loss on Euclidean distances between embeddings."""

    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, positive, negative):
        d_pos = torch.sqrt(((anchor - positive) ** 2).sum(dim=-1))  # expect: sqrt/unguarded-domain
        d_neg = torch.sqrt(((anchor - negative) ** 2).sum(dim=-1))  # expect: sqrt/unguarded-domain
        return torch.relu(d_pos - d_neg + self.margin).mean()
