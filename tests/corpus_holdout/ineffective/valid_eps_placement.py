# covers: eps-absorbed, eps-underflow-fp16
"""Epsilons placed where float32 can hold them; this module is trained in float32 only."""
import torch
import torch.nn as nn

# Kept in float32 on purpose: calling .half() or using torch.float16 here would flush the 1e-10 below.


class BernoulliLikelihood(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.head = nn.Linear(in_dim, out_dim)

    def forward(self, h, x):
        probs = torch.clamp(self.head(h), 0.0, 1.0)
        pos = x * torch.log(probs + 1e-10)
        neg = (1 - x) * torch.log(1 - probs + 1e-10)
        return -(pos + neg).sum(-1)


def coverage_penalty(attn: torch.Tensor) -> torch.Tensor:
    coverage = attn.cumsum(dim=1).clamp(0.0, 1.0)
    return -torch.log(1.0 - coverage + 1e-12).mean()


def scaled_ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    return num / (den.abs() + 1e-8)


def stable_std(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(x.var(dim=0, unbiased=False) + 1e-10)


def train(model: nn.Module, batches, steps: int = 100):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (h, x) in enumerate(batches):
        if step >= steps:
            break
        loss = model(h, x).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
