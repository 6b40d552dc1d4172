import torch
from torch import Tensor


def project_to_sphere(v: Tensor) -> Tensor:
    return v / torch.linalg.norm(v, dim=-1, keepdim=True)  # expect: div/manual-normalize


def prototype_logits(features: Tensor, prototypes: Tensor, tau: float = 0.1) -> Tensor:
    protos = prototypes / prototypes.norm(dim=1, keepdim=True)  # expect: div/manual-normalize
    return project_to_sphere(features) @ protos.t() / tau
