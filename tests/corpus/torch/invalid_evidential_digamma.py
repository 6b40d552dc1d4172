import torch
from torch import Tensor


def evidential_loss(alpha: Tensor, y_onehot: Tensor) -> Tensor:
    """Expected cross-entropy under a Dirichlet with concentration alpha."""
    strength = alpha.sum(dim=-1, keepdim=True)
    psi_strength = torch.special.digamma(strength)  # expect: digamma/unguarded-domain
    psi_alpha = torch.digamma(alpha)  # expect: digamma/unguarded-domain
    return (y_onehot * (psi_strength - psi_alpha)).sum(dim=-1).mean()
