import torch
import torch.nn.functional as F
from torch import Tensor


def angular_loss(pred: Tensor, target: Tensor) -> Tensor:
    """Angle between predicted and target directions (surface normals)."""
    cos = F.cosine_similarity(pred, target, dim=-1)
    angle = torch.acos(torch.clamp(cos, -1.0, 1.0))  # expect: acos/unguarded-domain
    return angle.mean()
