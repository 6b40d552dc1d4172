# covers: masked-softmax-inf
from torch import Tensor


def masked_attention(q: Tensor, k: Tensor, v: Tensor, key_padding_mask: Tensor, scale: float) -> Tensor:
    scores = q @ k.transpose(-2, -1) * scale
    scores = scores.masked_fill(key_padding_mask[:, None, :] == 0, -1e9)
    weights = scores.softmax(-1)
    return weights @ v
