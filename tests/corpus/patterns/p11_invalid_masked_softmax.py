import torch
from torch import Tensor


def padded_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> Tensor:
    """Rows whose keys are all padding (empty sequences) are fully masked."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # expect: softmax/masked-softmax-inf
    return torch.matmul(weights, v)
