# covers: fp16-scores-overflow
import math

import torch
import torch.nn.functional as F


def half_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    q, k = q.half(), k.half()
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)
    attn = F.softmax(scores.float(), dim=-1).to(v.dtype)
    return attn @ v


def float32_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    with torch.autocast("cuda", dtype=torch.float16):
        return torch.softmax(q.float() @ k.float().transpose(-2, -1), dim=-1)
