import torch
from torch import Tensor


def focal_loss(logits: Tensor, targets: Tensor, alpha: float = 0.25, gamma: float = 2.0) -> Tensor:
    """Hand-written binary focal loss on probabilities."""
    p = torch.sigmoid(logits)
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = -alpha * (1 - p_t) ** gamma * torch.log(p_t)  # expect: pow/unguarded-domain, log/unguarded-domain
    return loss.mean()
