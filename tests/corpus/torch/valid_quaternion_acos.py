# covers: unguarded-domain, manual-normalize
import torch
import torch.nn.functional as F
from torch import Tensor


def quaternion_geodesic_loss(q_pred: Tensor, q_true: Tensor) -> Tensor:
    q_pred = F.normalize(q_pred, dim=-1)
    dot = (q_pred * q_true).sum(dim=-1).abs()
    angle = 2.0 * torch.acos(dot.clamp(max=1 - 1e-6))
    return angle.mean()
