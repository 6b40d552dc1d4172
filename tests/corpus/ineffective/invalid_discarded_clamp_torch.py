import torch
from torch import Tensor


def nll_from_probs(probs: Tensor, targets: Tensor) -> Tensor:
    """The clamp's result is thrown away."""
    torch.clamp(probs, min=1e-6)  # expect: clamp/discarded-guard
    picked = probs.gather(1, targets.unsqueeze(1)).squeeze(1)
    return -torch.log(picked).mean()  # expect: log/unguarded-domain
