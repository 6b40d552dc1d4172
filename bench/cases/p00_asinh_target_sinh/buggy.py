"""Regression of heavy-tailed targets (fluxes, prices) predicted in asinh space.

The network predicts z = asinh(y / scale); the loss mixes an error in z with a relative
error in the original units, which needs the decoded prediction scale * sinh(z).
"""

import torch


def asinh_space_loss(
    z_pred: torch.Tensor, y_true: torch.Tensor, scale: float = 1.0, mix: float = 0.1
) -> torch.Tensor:
    """z_pred: [batch] raw network outputs; y_true: [batch] targets in original units."""
    z_true = torch.asinh(y_true / scale)
    transformed = (z_pred - z_true).abs().mean()
    y_pred = scale * torch.sinh(z_pred)  # numcheck-bug: sinh
    relative = ((y_pred - y_true).abs() / (y_true.abs() + scale)).mean()
    return transformed + mix * relative
