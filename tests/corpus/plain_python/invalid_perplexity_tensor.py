import torch


def perplexity(mean_nll: torch.Tensor) -> torch.Tensor:
    """torch.exp of an unbounded loss, unlike math.exp on a clipped float."""
    return torch.exp(mean_nll)  # expect: exp/unguarded-domain
