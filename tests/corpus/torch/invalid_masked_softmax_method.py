import math

from torch import Tensor


def masked_attention(q: Tensor, k: Tensor, v: Tensor, key_padding_mask: Tensor, scale: float) -> Tensor:
    scores = q @ k.transpose(-2, -1) * scale
    scores = scores.masked_fill(key_padding_mask[:, None, :] == 0, -math.inf)
    weights = scores.softmax(-1)  # expect: softmax/masked-softmax-inf
    return weights @ v
