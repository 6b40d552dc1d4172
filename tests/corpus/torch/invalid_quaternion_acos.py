import torch
from torch import Tensor


def quaternion_geodesic_loss(q_pred: Tensor, q_true: Tensor) -> Tensor:
    """Rotation error in radians between predicted and ground-truth quaternions."""
    q_pred = q_pred / q_pred.norm(dim=-1, keepdim=True)  # expect: div/manual-normalize
    dot = (q_pred * q_true).sum(dim=-1).abs()
    angle = 2.0 * torch.acos(dot)  # expect: acos/unguarded-domain
    return angle.mean()
