# covers: unguarded-domain
import torch
from torch import Tensor


def euclidean(a: Tensor, b: Tensor) -> Tensor:
    sq = ((a - b) ** 2).sum(dim=-1)
    return torch.sqrt(torch.maximum(sq, torch.tensor(1e-12)))
