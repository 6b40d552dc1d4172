import torch
import torch.nn.functional as F
from torch import Tensor


def evidential_nll(logits: Tensor, y_onehot: Tensor) -> Tensor:
    alpha = F.softplus(logits)
    strength = alpha.sum(dim=-1, keepdim=True)
    return (y_onehot * (torch.digamma(strength) - torch.digamma(alpha))).sum(-1).mean()  # expect: digamma/unguarded-domain
