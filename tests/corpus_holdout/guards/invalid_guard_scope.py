"""Guards that are applied on one path only, too late, or merely logged."""
import math

import torch
import torch.nn as nn


class PoissonHead(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, 1)

    def forward(self, h, counts, training_mode: bool = True):
        rate = self.proj(h).squeeze(-1)
        if training_mode:
            rate = rate.clamp(min=1e-4)
        nll = rate - counts * torch.log(rate)  # expect: log/unguarded-domain
        return nll.mean()


def soft_target_xent(probs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    logp = torch.log(probs)  # expect: log/unguarded-domain
    probs = probs.clamp(min=1e-7)
    return -(target * logp).sum(-1).mean()


def gaussian_entropy(scale: torch.Tensor) -> torch.Tensor:
    if not (scale > 0).all():
        print("warning: non-positive scale in gaussian_entropy")
    return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(scale)  # expect: log/unguarded-domain


def total_loss(head: PoissonHead, h, counts, probs, target, scale):
    return head(h, counts) + soft_target_xent(probs, target) - 0.01 * gaussian_entropy(scale).mean()
