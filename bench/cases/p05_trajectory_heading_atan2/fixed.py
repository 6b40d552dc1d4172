"""Heading-consistency loss for multi-agent trajectory prediction.

The heading of each predicted step is the direction of the displacement between consecutive
positions; it is compared with the annotated heading through 1 - cos(difference).
"""

import torch


def heading_loss(pred_traj: torch.Tensor, gt_heading: torch.Tensor) -> torch.Tensor:
    """pred_traj: [agents, steps, 2] positions in metres; gt_heading: [agents, steps - 1]."""
    disp = pred_traj[:, 1:] - pred_traj[:, :-1]
    # atan2 has no derivative at the origin (a parked agent): guard both where branches
    moving = disp.abs().sum(dim=-1) > 1e-6
    safe_x = torch.where(moving, disp[..., 0], torch.ones_like(disp[..., 0]))
    safe_y = torch.where(moving, disp[..., 1], torch.zeros_like(disp[..., 1]))
    heading = torch.atan2(safe_y, safe_x)
    diff = torch.where(moving, heading - gt_heading, torch.zeros_like(heading))
    per_step = 1.0 - torch.cos(diff)
    return per_step.mean()
