import torch
import torch.nn as nn
from torch import Tensor


def link_prediction_loss(src: Tensor, dst: Tensor, labels: Tensor) -> Tensor:
    """Graph link prediction: dot-product scores of node embeddings."""
    logits = (src * dst).sum(dim=-1)
    return nn.BCELoss()(torch.sigmoid(logits), labels)  # expect: binary_cross_entropy/bce-sigmoid
