"""Cross-attention block run entirely in float16 (model.half() inference/training)."""

import torch


def half_cross_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """q: [batch, queries, d], k and v: [batch, keys, d], all float16.

    The softmax is computed in float32 and cast back.
    """
    scale = q.shape[-1] ** -0.5
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    # exp overflows above 11.09 in float16: use the max-shifted softmax, in float32
    weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.matmul(weights, v)
