# covers: eps-underflow-fp16
import torch
import torch.nn as nn


class RelativeL1(nn.Module):
    """An epsilon float16 can represent (its smallest subnormal is about 6e-8)."""

    def forward(self, pred, target):
        return ((pred - target).abs() / (target.abs() + 1e-4)).mean()


def build(model: nn.Module) -> nn.Module:
    return model.cuda().half()
