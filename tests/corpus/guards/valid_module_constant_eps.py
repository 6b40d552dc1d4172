# covers: unguarded-domain
import torch
from torch import Tensor

EPS = 1e-6


def l1_normalize(x: Tensor) -> Tensor:
    return x / (x.abs().sum(dim=-1, keepdim=True) + EPS)


def log_ratio(a: Tensor, b: Tensor) -> Tensor:
    return torch.log(a.abs() + EPS) - torch.log(b.abs() + EPS)
