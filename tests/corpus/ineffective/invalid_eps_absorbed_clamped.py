import torch
from torch import Tensor


def bernoulli_nll(x: Tensor, recon: Tensor) -> Tensor:
    """1 + 1e-10 == 1 in float32, so the epsilon is gone before the subtraction."""
    p = recon.clamp(0.0, 1.0)
    pos = x * torch.log(p + 1e-10)
    neg = (1 - x) * torch.log(1e-10 + 1 - p)  # expect: log/eps-absorbed
    return -(pos + neg).sum(dim=-1).mean()
