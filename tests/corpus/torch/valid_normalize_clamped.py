# covers: manual-normalize
import torch
import torch.nn.functional as F
from torch import Tensor


def project_to_sphere(v: Tensor) -> Tensor:
    return v / torch.linalg.norm(v, dim=-1, keepdim=True).clamp_min(1e-12)


def prototype_logits(features: Tensor, prototypes: Tensor, tau: float = 0.1) -> Tensor:
    protos = F.normalize(prototypes, dim=1)
    return project_to_sphere(features) @ protos.t() / tau
