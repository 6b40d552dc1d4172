import torch


def natural_params(probs: torch.Tensor) -> torch.Tensor:
    """`probs` may be exactly 0 or 1 (a unit-interval constraint allows both)."""
    return torch.logit(probs.clamp(0.0, 1.0))  # expect: logit/unguarded-domain
