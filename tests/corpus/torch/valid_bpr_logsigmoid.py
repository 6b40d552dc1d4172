# covers: log-sigmoid
import torch.nn as nn
import torch.nn.functional as F


class BPRLoss(nn.Module):
    def forward(self, pos_scores, neg_scores):
        diff = pos_scores - neg_scores
        return -F.logsigmoid(diff).mean()
