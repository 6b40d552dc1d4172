import torch
from torch import Tensor


def flow_magnitude(flow: Tensor) -> Tensor:
    """End-point error of optical flow; static pixels have zero flow."""
    u, v = flow[:, 0], flow[:, 1]
    return torch.sqrt(u ** 2 + v ** 2)  # expect: sqrt/unguarded-domain
