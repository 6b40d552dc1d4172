import torch.nn.functional as F
from torch import Tensor


def masked_token_loss(logits: Tensor, targets: Tensor, mask: Tensor) -> Tensor:
    """Mean token loss over non-padding positions."""
    loss = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return (loss * mask).sum() / mask.sum()  # expect: div/unguarded-domain
