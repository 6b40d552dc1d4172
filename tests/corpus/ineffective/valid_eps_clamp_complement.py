# covers: eps-absorbed
import torch
from torch import Tensor


def unlikelihood_loss(logits: Tensor, negative_mask: Tensor) -> Tensor:
    probs = torch.softmax(logits, dim=-1)
    one_minus = torch.log(torch.clamp(1.0 - probs, min=1e-5))
    return -(one_minus * negative_mask).sum(dim=-1).mean()
