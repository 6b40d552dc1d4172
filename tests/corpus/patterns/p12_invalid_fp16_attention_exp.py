import torch
from torch import Tensor


def linear_time_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> Tensor:
    """Un-normalised exponential attention computed under fp16 autocast."""
    with torch.autocast("cuda", dtype=torch.float16):
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        weights = torch.exp(scores) * mask  # expect: exp/unguarded-domain
        denom = weights.sum(dim=-1, keepdim=True).clamp_min(1e-4)
        return torch.matmul(weights / denom, v)
