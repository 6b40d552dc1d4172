# covers: unguarded-domain, masked-softmax-inf
import torch
from torch import Tensor


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> Tensor:
    with torch.autocast("cuda", dtype=torch.float16):
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        scores = scores.float().masked_fill(mask == 0, -1e9)
        weights = torch.softmax(scores, dim=-1).to(v.dtype)
        return torch.matmul(weights, v)
