# covers: eps-absorbed
import torch
from torch import Tensor


def bernoulli_nll(x: Tensor, recon: Tensor) -> Tensor:
    """The epsilon is added after 1 - p, where it survives."""
    p = recon.clamp(0.0, 1.0)
    pos = x * torch.log(p + 1e-10)
    neg = (1 - x) * torch.log(1 - p + 1e-10)
    return -(pos + neg).sum(dim=-1).mean()
