import torch
from torch import Tensor


def kl_categorical(p: Tensor, q: Tensor) -> Tensor:
    """KL(p || q) between two predicted class distributions."""
    return (p * (torch.log(p) - torch.log(q))).sum(dim=-1).mean()  # expect: log/unguarded-domain
