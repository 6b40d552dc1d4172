import torch
from torch import Tensor


def policy_entropy(probs: Tensor) -> Tensor:
    """Entropy bonus; a deterministic policy has exact zeros in probs."""
    return -(probs * torch.log(probs)).sum(dim=-1).mean()  # expect: log/unguarded-domain


def bernoulli_log_likelihood(p: Tensor, y: Tensor) -> Tensor:
    ll = y * torch.log(p)  # expect: log/unguarded-domain
    ll = ll + (1 - y) * torch.log(1 - p)  # expect: log/unguarded-domain
    return ll.sum(-1)
