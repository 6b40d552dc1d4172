"""Angular error loss for surface-normal estimation: mean angle between prediction and truth."""

import torch
import torch.nn.functional as F


def angular_error_loss(pred_normals: torch.Tensor, gt_normals: torch.Tensor) -> torch.Tensor:
    """pred_normals, gt_normals: [pixels, 3], not necessarily unit length.

    Returns the mean angle in radians. The cosine is clamped to [-1, 1] so that rounding
    cannot push acos out of its domain.
    """
    cos = F.cosine_similarity(pred_normals, gt_normals, dim=-1, eps=1e-8)
    cos = torch.clamp(cos, -1.0, 1.0)
    angle = torch.acos(cos)  # numcheck-bug: acos
    valid = (gt_normals.abs().sum(dim=-1) > 0).float()
    return (angle * valid).sum() / valid.sum().clamp_min(1.0)
