# covers: unguarded-domain
import torch
import torch.nn.functional as F
from torch import Tensor


def dirichlet_terms(evidence: Tensor) -> tuple[Tensor, Tensor]:
    alpha = F.relu(evidence) + 1.0
    log_norm = torch.lgamma(alpha).sum(dim=-1)
    psi_alpha = torch.special.digamma(alpha)
    return log_norm, psi_alpha
