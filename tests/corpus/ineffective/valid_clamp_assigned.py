# covers: discarded-guard
import torch
from torch import Tensor


def nll_from_probs(probs: Tensor, targets: Tensor) -> Tensor:
    probs = torch.clamp(probs, min=1e-6)
    picked = probs.gather(1, targets.unsqueeze(1)).squeeze(1)
    return -torch.log(picked.clamp(min=1e-6)).mean()
