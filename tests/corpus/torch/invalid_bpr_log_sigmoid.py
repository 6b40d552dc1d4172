import torch
import torch.nn as nn


class BPRLoss(nn.Module):
    """Bayesian personalised ranking loss for implicit feedback."""

    def forward(self, pos_scores, neg_scores):
        diff = pos_scores - neg_scores
        return -torch.log(torch.sigmoid(diff)).mean()  # expect: log/log-sigmoid
