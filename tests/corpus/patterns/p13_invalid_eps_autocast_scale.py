import torch
from torch import Tensor


def scale_invariant_loss(pred: Tensor, target: Tensor) -> Tensor:
    with torch.cuda.amp.autocast():
        scale = (pred * target).sum(-1, keepdim=True) / ((pred ** 2).sum(-1, keepdim=True) + 1e-10)  # expect: div/eps-underflow-fp16
        return ((scale * pred - target) ** 2).mean()
