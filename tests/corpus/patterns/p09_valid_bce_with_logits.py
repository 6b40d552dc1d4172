# covers: bce-sigmoid
import torch
import torch.nn as nn


class MultiLabelClassifier(nn.Module):
    def __init__(self, dim: int, num_labels: int):
        super().__init__()
        self.head = nn.Linear(dim, num_labels)
        self.crit = nn.BCEWithLogitsLoss()

    def forward(self, features, labels):
        out = self.head(features)
        loss = self.crit(out, labels)
        return loss, torch.sigmoid(out)
