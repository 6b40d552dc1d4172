"""Straight-through Gumbel-softmax sampling for discrete latent variables.

The uniform noise is drawn by the caller (torch.rand, which returns values in [0, 1)) so
that a training step can be replayed.
"""

import torch


def gumbel_softmax(
    logits: torch.Tensor, uniform_noise: torch.Tensor, tau: float = 1.0, hard: bool = True
) -> torch.Tensor:
    """logits, uniform_noise: [batch, categories]."""
    gumbels = -torch.log(-torch.log(uniform_noise))  # numcheck-bug: log
    y_soft = torch.softmax((logits + gumbels) / tau, dim=-1)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim=-1, keepdim=True)
    y_hard = torch.zeros_like(y_soft).scatter_(-1, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
