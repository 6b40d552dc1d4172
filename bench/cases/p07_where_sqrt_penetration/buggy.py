"""Interpenetration penalty for hand/body pose fitting with sphere proxies.

For every surface point inside a proxy sphere the penalty adds the half chord
sqrt(r^2 - d^2); points outside contribute nothing.
"""

import torch


def penetration_loss(
    points: torch.Tensor, centers: torch.Tensor, radii: torch.Tensor
) -> torch.Tensor:
    """points: [batch, n, 3]; centers: [batch, m, 3]; radii: [m]."""
    d2 = ((points[:, :, None, :] - centers[:, None, :, :]) ** 2).sum(dim=-1)
    gap = radii**2 - d2
    inside = gap > 0
    depth = torch.where(inside, torch.sqrt(gap), torch.zeros_like(gap))  # numcheck-bug: sqrt
    per_sample = depth.sum(dim=(1, 2))
    return per_sample.mean()
