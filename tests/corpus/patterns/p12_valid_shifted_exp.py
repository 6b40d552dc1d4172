# covers: unguarded-domain
import torch
from torch import Tensor


def exp_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> Tensor:
    with torch.autocast("cuda", dtype=torch.float16):
        scores = (torch.matmul(q, k.transpose(-2, -1)) * scale).float()
        weights = torch.exp(scores - scores.max(dim=-1, keepdim=True).values) * mask
        denom = weights.sum(dim=-1, keepdim=True).clamp_min(1e-4)
        return torch.matmul((weights / denom).to(v.dtype), v)
