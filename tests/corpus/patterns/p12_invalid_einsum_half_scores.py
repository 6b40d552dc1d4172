import torch


def multihead_scores(q: torch.Tensor, k: torch.Tensor, head_dim: int) -> torch.Tensor:
    q, k = q.to(torch.float16), k.to(torch.float16)
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * head_dim**-0.5
    return torch.softmax(logits, dim=-1)  # expect: softmax/fp16-scores-overflow
