"""Scaled dot-product self-attention in float16 (T5-style large activations)."""

import torch
from torch import nn


class HalfSelfAttention(nn.Module):
    def __init__(self, head_dim: int = 64) -> None:
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        # q, k, v: [batch, tokens, head_dim] float16 activations
        attn = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)  # numcheck-bug: softmax
        out = attn @ v
        return out
