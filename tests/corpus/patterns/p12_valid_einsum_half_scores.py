# covers: fp16-scores-overflow
import torch


def multihead_scores(q: torch.Tensor, k: torch.Tensor, head_dim: int) -> torch.Tensor:
    q, k = q.to(torch.float16), k.to(torch.float16)
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * head_dim**-0.5
    return torch.softmax(logits.float(), dim=-1).to(q.dtype)


def bfloat16_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    q, k = q.to(torch.bfloat16), k.to(torch.bfloat16)
    return torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
