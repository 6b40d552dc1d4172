"""Heading-consistency loss for multi-agent trajectory prediction.

The heading of each predicted step is the direction of the displacement between consecutive
positions; it is compared with the annotated heading through 1 - cos(difference).
"""

import torch


def heading_loss(pred_traj: torch.Tensor, gt_heading: torch.Tensor) -> torch.Tensor:
    """pred_traj: [agents, steps, 2] positions in metres; gt_heading: [agents, steps - 1]."""
    disp = pred_traj[:, 1:] - pred_traj[:, :-1]
    heading = torch.atan2(disp[..., 1], disp[..., 0])  # numcheck-bug: atan2
    diff = heading - gt_heading
    per_step = 1.0 - torch.cos(diff)
    return per_step.mean()
