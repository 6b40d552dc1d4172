# covers: discarded-guard
import torch
from torch import Tensor


@torch.no_grad()
def update_running_scale(running: Tensor, batch: Tensor, momentum: float = 0.1) -> Tensor:
    """Running estimate of feature scale, returned in log space."""
    running.mul_(1 - momentum).add_(momentum * batch.abs().mean(0))
    running.clamp_(min=1e-6)
    return torch.log(running)
