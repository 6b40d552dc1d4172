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
    # double where: the masked branch must not see negative input either, or its NaN
    # derivative leaks through the where in the backward pass
    safe_gap = torch.where(inside, gap, torch.ones_like(gap))
    depth = torch.where(inside, torch.sqrt(safe_gap), torch.zeros_like(gap))
    per_sample = depth.sum(dim=(1, 2))
    return per_sample.mean()
