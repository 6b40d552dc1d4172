import torch
from torch import Tensor


def bernoulli_nll(logits: Tensor, targets: Tensor) -> Tensor:
    pos = targets * torch.log(torch.sigmoid(logits))  # expect: log/log-sigmoid
    neg = (1 - targets) * torch.log(1 - torch.sigmoid(logits))  # expect: log/log-sigmoid
    return -(pos + neg).mean()
