# covers: unguarded-domain
import torch
from torch import Tensor


def log_normal_nll(x: Tensor, scale: Tensor) -> Tensor:
    if (scale <= 0).any():
        raise ValueError("scale must be strictly positive")
    if (x <= 0).any():
        raise ValueError("log-normal observations must be positive")
    z = torch.log(x) / scale
    return 0.5 * z ** 2 + torch.log(scale) + torch.log(x)
