import torch
from torch import Tensor


def swish(x: Tensor, beta: float = 1.0) -> Tensor:
    """Hand-written Swish: exp overflows for large negative inputs."""
    return x / (1.0 + torch.exp(-beta * x))  # expect: exp/unguarded-domain
