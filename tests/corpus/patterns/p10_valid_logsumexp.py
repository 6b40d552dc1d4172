# covers: log-sum-exp
import torch
from torch import Tensor


def free_energy(logits: Tensor) -> Tensor:
    return -torch.logsumexp(logits, dim=1)
