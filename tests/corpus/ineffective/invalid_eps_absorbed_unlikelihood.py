import torch
from torch import Tensor


def unlikelihood_loss(logits: Tensor, negative_mask: Tensor) -> Tensor:
    """Push down the probability of negative candidate tokens."""
    probs = torch.softmax(logits, dim=-1)
    one_minus = torch.log(1.0 + 1e-8 - probs)  # expect: log/eps-absorbed
    return -(one_minus * negative_mask).sum(dim=-1).mean()
