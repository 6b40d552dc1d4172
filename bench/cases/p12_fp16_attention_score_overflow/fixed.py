"""Scaled dot-product self-attention in float16 (T5-style large activations)."""

import torch
from torch import nn


class HalfSelfAttention(nn.Module):
    def __init__(self, head_dim: int = 64) -> None:
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        # q, k, v: [batch, tokens, head_dim] float16 activations
        # scale before the product so q.k cannot pass 65504, and normalise in float32
        scores = (q * self.scale) @ k.transpose(-2, -1)
        attn = torch.softmax(scores.float(), dim=-1).to(v.dtype)
        out = attn @ v
        return out
