# covers: unguarded-domain
"""Inverse trigonometric and hyperbolic functions behind open clamps (pose, flows, spheres)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotation_geodesic(R1: torch.Tensor, R2: torch.Tensor) -> torch.Tensor:
    R = R1.transpose(-1, -2) @ R2
    trace = R.diagonal(dim1=-2, dim2=-1).sum(-1)
    cos = ((trace - 1.0) / 2.0).clamp(-1.0 + 1e-6, 1.0 - 1e-6)
    return torch.acos(cos)


def great_circle(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    u = F.normalize(u, dim=-1)
    v = F.normalize(v, dim=-1)
    s = (u * v).sum(-1).clamp(-1.0 + 1e-6, 1.0 - 1e-6)
    return torch.acos(s)


class TanhBijector(nn.Module):
    def forward(self, x):
        return torch.tanh(x)

    def inverse(self, y):
        y = y.clamp(-1.0 + 1e-6, 1.0 - 1e-6)
        return torch.atanh(y)


def latitude_from_z(z: torch.Tensor) -> torch.Tensor:
    return torch.asin(z.clamp(min=-1.0 + 1e-6, max=1.0 - 1e-6))


def pose_loss(R_pred: torch.Tensor, R_true: torch.Tensor, dirs_pred: torch.Tensor, dirs_true: torch.Tensor):
    return rotation_geodesic(R_pred, R_true).mean() + great_circle(dirs_pred, dirs_true).mean()
