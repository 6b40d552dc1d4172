# covers: unguarded-domain
import torch
import torch.nn as nn


class TripletDistanceLoss(nn.Module):
    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, positive, negative):
        sq_pos = ((anchor - positive) ** 2).sum(dim=-1).clamp_min(1e-12)
        sq_neg = ((anchor - negative) ** 2).sum(dim=-1).clamp_min(1e-12)
        d_pos = torch.sqrt(sq_pos)
        d_neg = sq_neg.sqrt()
        return torch.relu(d_pos - d_neg + self.margin).mean()
