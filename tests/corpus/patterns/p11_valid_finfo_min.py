# covers: masked-softmax-inf
import torch
from torch import Tensor


def padded_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> Tensor:
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v)
