import torch
from torch import Tensor


def token_nll(probs: Tensor, targets: Tensor) -> Tensor:
    """Adding the epsilon after the log does not protect the log."""
    picked = probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return -(torch.log(picked) + 1e-8).mean()  # expect: log/unguarded-domain
