import torch
from torch import Tensor


def free_energy(logits: Tensor) -> Tensor:
    """Energy score for out-of-distribution detection."""
    return -torch.log(torch.sum(torch.exp(logits), dim=1))  # expect: log/log-sum-exp
