import torch
import torch.nn as nn


class MultiLabelClassifier(nn.Module):
    def __init__(self, dim: int, num_labels: int):
        super().__init__()
        self.head = nn.Linear(dim, num_labels)
        self.crit = nn.BCELoss()

    def forward(self, features, labels):
        out = self.head(features)
        loss = self.crit(torch.sigmoid(out), labels)  # expect: binary_cross_entropy/bce-sigmoid
        return loss
