"""BERT-style self-attention block and a sentence mean-pooler (HuggingFace module layout)."""
import math
from typing import Optional

import torch as th
from torch import nn
from torch.nn import functional as F


class SelfAttention(nn.Module):
    def __init__(self, hidden_size: int = 768, num_heads: int = 12, dropout: float = 0.1):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout)

    def _split_heads(self, x: th.Tensor) -> th.Tensor:
        bsz, seq_len, _ = x.size()
        return x.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, attention_mask: Optional[th.Tensor] = None):
        q = self._split_heads(self.query(hidden_states))
        k = self._split_heads(self.key(hidden_states))
        v = self._split_heads(self.value(hidden_states))
        scores = th.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            keep = attention_mask[:, None, None, :].bool()
            scores = scores.masked_fill(~keep, float("-inf"))
        probs = F.softmax(scores, dim=-1)  # expect: softmax/masked-softmax-inf
        probs = self.dropout(probs)
        context = th.matmul(probs, v).transpose(1, 2).contiguous()
        return context.view(context.size(0), context.size(1), -1)


class MeanPooler(nn.Module):
    """Sentence embedding = average of the non-padding token embeddings."""

    def forward(self, token_embeddings, attention_mask):
        mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)
        summed = (token_embeddings * mask).sum(dim=1)
        counts = mask.sum(dim=1)
        return summed / counts  # expect: div/unguarded-domain


class SentenceEncoder(nn.Module):
    def __init__(self, vocab_size: int = 30522, hidden_size: int = 768):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.attn = SelfAttention(hidden_size)
        self.pool = MeanPooler()

    def forward(self, input_ids, attention_mask):
        h = self.embed(input_ids)
        h = h + self.attn(h, attention_mask)
        return self.pool(h, attention_mask)
