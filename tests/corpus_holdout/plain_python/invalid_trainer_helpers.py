"""Trainer helpers: mostly plain-number bookkeeping, plus a hand-written gradient clipper."""
import math
from typing import Iterable

import torch


def format_eta(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}"


def linear_warmup(step: int, warmup_steps: int, base_lr: float) -> float:
    return base_lr * min(1.0, (step + 1) / warmup_steps)


def summarize(losses: list) -> dict:
    n = len(losses)
    mean = sum(losses) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in losses) / n)
    return {"mean": mean, "std": std, "cv": std / mean if mean else float("nan")}


def clip_grad_norm(parameters: Iterable[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = torch.norm(torch.stack([torch.norm(g.detach(), 2) for g in grads]), 2)
    clip_coef = max_norm / total_norm  # expect: div/unguarded-domain
    if clip_coef < 1:
        for g in grads:
            g.detach().mul_(clip_coef)
    return total_norm


def inverse_class_frequency(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    counts = torch.bincount(labels, minlength=num_classes).float()
    weights = counts.sum() / counts  # expect: div/unguarded-domain
    return weights / num_classes
