# covers: where-grad-leak
import torch
from torch import Tensor


def safe_norm(v: Tensor) -> Tensor:
    sq = (v * v).sum(dim=-1)
    safe_sq = torch.where(sq > 0, sq, torch.ones_like(sq))
    return torch.where(sq > 0, torch.sqrt(safe_sq), torch.zeros_like(sq))
