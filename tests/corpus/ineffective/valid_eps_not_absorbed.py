# covers: eps-absorbed
import torch
from torch import Tensor


def bernoulli_nll(x: Tensor, recon: Tensor) -> Tensor:
    """1e-6 is larger than float32's rounding step at 1.0, so 1 + 1e-6 > 1."""
    p = recon.clamp(0.0, 1.0)
    pos = x * torch.log(p + 1e-6)
    neg = (1 - x) * torch.log(1e-6 + 1 - p)
    return -(pos + neg).sum(dim=-1).mean()
