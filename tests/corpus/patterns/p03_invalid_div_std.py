import torch
from torch import Tensor


def normalize_advantages(advantages: Tensor) -> Tensor:
    """PPO advantage normalisation over the rollout batch."""
    return (advantages - advantages.mean()) / advantages.std()  # expect: div/unguarded-domain


def standardize_per_sample(x: Tensor) -> Tensor:
    mean = x.mean(dim=1, keepdim=True)
    std = torch.std(x, dim=1, keepdim=True)
    return (x - mean) / std  # expect: div/unguarded-domain
