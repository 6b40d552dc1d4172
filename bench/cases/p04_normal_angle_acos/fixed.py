"""Angular error loss for surface-normal estimation: mean angle between prediction and truth."""

import torch
import torch.nn.functional as F


def angular_error_loss(pred_normals: torch.Tensor, gt_normals: torch.Tensor) -> torch.Tensor:
    """pred_normals, gt_normals: [pixels, 3], not necessarily unit length.

    Returns the mean angle in radians. The cosine is clamped strictly inside [-1, 1]: acos
    has an infinite derivative at +-1, so clamping to [-1, 1] is not enough.
    """
    cos = F.cosine_similarity(pred_normals, gt_normals, dim=-1, eps=1e-8)
    cos = torch.clamp(cos, -1.0 + 1e-6, 1.0 - 1e-6)
    angle = torch.acos(cos)
    valid = (gt_normals.abs().sum(dim=-1) > 0).float()
    return (angle * valid).sum() / valid.sum().clamp_min(1.0)
