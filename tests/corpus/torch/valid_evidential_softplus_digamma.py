# covers: unguarded-domain
import torch
import torch.nn.functional as F
from torch import Tensor


def evidential_nll(logits: Tensor, y_onehot: Tensor) -> Tensor:
    alpha = F.softplus(logits) + 1.0
    strength = alpha.sum(dim=-1, keepdim=True)
    return (y_onehot * (torch.digamma(strength) - torch.digamma(alpha))).sum(-1).mean()


def exp_evidence(logits: Tensor) -> Tensor:
    return torch.digamma(torch.exp(logits.clamp(-10, 10)))
