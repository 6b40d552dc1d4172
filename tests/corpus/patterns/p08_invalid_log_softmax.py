import torch
import torch.nn.functional as F
from torch import Tensor


def soft_cross_entropy(logits: Tensor, soft_targets: Tensor) -> Tensor:
    """Cross-entropy against label-smoothed or distilled targets."""
    log_probs = torch.log(F.softmax(logits, dim=-1))  # expect: log/log-softmax
    return -(soft_targets * log_probs).sum(dim=-1).mean()
