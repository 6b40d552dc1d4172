# covers: unguarded-domain
import torch
from torch import Tensor


def soft_assign(logits: Tensor, mask: Tensor) -> Tensor:
    """Masked soft assignment with the row maximum subtracted before exp."""
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    weights = torch.exp(shifted) * mask
    return weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-6)
