# covers: masked-softmax-inf, unguarded-domain
"""GPT-2 style causal attention with finite mask fills, plus guarded masked averages."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int = 512, n_head: int = 8, block_size: int = 1024):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        causal = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, block_size, block_size))

    def forward(self, x, padding_mask=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        fill = torch.finfo(att.dtype).min
        att = att.masked_fill(~self.causal[:, :, :T, :T], fill)
        if padding_mask is not None:
            att = att.masked_fill(padding_mask[:, None, None, :] == 0, fill)
        att = F.softmax(att.float(), dim=-1).to(q.dtype)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.unsqueeze(-1).float()
    total = (hidden * weights).sum(dim=1)
    denom = torch.clamp(weights.sum(dim=1), min=1e-9)
    return total / denom


def sequence_log_likelihood(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    log_probs = F.log_softmax(logits, dim=-1)
    token_ll = log_probs.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    return (token_ll * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)
