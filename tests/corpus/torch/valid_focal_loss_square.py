# covers: unguarded-domain, bce-sigmoid
import torch
import torch.nn.functional as F
from torch import Tensor


def sigmoid_focal_loss(inputs: Tensor, targets: Tensor, alpha: float = 0.25) -> Tensor:
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** 2)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return (alpha_t * loss).mean()
