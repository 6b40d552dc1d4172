"""Direction-of-arrival regression for a microphone array: elevation loss.

The network outputs an unnormalised 3-D direction; the elevation is asin of the z component
of the unit vector and is compared with the annotated elevation.
"""

import torch
import torch.nn.functional as F


def elevation_loss(pred_direction: torch.Tensor, target_elevation: torch.Tensor) -> torch.Tensor:
    """pred_direction: [batch, sources, 3]; target_elevation: [batch, sources] in radians."""
    unit = F.normalize(pred_direction, dim=-1, eps=1e-8)
    # asin has an infinite derivative at +-1 (a source straight above or below)
    elevation = torch.asin(unit[..., 2].clamp(-1.0 + 1e-6, 1.0 - 1e-6))
    error = elevation - target_elevation
    # wrap-free elevation error: smooth L1 in radians
    return F.smooth_l1_loss(error, torch.zeros_like(error), beta=0.1)
