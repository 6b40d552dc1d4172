# covers: unguarded-domain, discarded-guard
import torch
from torch import Tensor


def log_likelihood(probs: Tensor, targets: Tensor) -> Tensor:
    probs = probs.clamp(min=1e-6)
    return (targets * torch.log(probs)).sum(-1).mean()


def inverse_scale(scale: Tensor) -> Tensor:
    scale = torch.clamp(scale, min=1e-3)
    return 1.0 / scale
