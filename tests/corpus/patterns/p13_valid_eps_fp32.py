# covers: eps-underflow-fp16
import torch
import torch.nn as nn


class RelativeL1(nn.Module):
    """The same 1e-8 is representable: this model runs in float32 only."""

    def forward(self, pred, target):
        return ((pred - target).abs() / (target.abs() + 1e-8)).mean()


def build(model: nn.Module) -> nn.Module:
    return model.to(dtype=torch.float32)
