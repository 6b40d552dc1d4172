"""Evidential deep learning classification loss (Sensoy et al., 2018), digamma form.

The network outputs Dirichlet concentration parameters; the expected cross-entropy under
the Dirichlet is sum_k y_k (digamma(S) - digamma(alpha_k)).
"""

import torch
import torch.nn.functional as F


def evidential_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """logits: [batch, classes]; targets: [batch] class indices."""
    num_classes = logits.shape[-1]
    # alpha = evidence + 1 keeps every concentration >= 1; softplus alone underflows to
    # ~1e-39 for logits below -88 and digamma(alpha) ~ -1/alpha overflows
    alpha = F.softplus(logits) + 1.0
    strength = alpha.sum(dim=-1, keepdim=True)
    y = F.one_hot(targets, num_classes).to(logits.dtype)
    loss = (y * (torch.digamma(strength) - torch.digamma(alpha))).sum(-1)
    return loss.mean()
