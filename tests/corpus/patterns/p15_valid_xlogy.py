# covers: unguarded-domain
import torch
from torch import Tensor
from torch.distributions import Categorical


def policy_entropy(probs: Tensor) -> Tensor:
    return -torch.special.xlogy(probs, probs).sum(dim=-1).mean()


def policy_entropy_from_logits(logits: Tensor) -> Tensor:
    return Categorical(logits=logits).entropy().mean()
