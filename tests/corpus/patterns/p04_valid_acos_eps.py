# covers: unguarded-domain
import torch
import torch.nn.functional as F
from torch import Tensor


def angular_loss(pred: Tensor, target: Tensor) -> Tensor:
    cos = F.cosine_similarity(pred, target, dim=-1)
    angle = torch.acos(torch.clamp(cos, -1 + 1e-6, 1 - 1e-6))
    return angle.mean()


def elevation_angle(directions: Tensor) -> Tensor:
    z = directions[..., 2].clamp(-1 + 1e-6, 1 - 1e-6)
    return torch.asin(z)
