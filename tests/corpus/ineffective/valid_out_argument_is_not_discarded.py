# covers: discarded-guard
import torch


def update(exp_avg_sq: torch.Tensor, grad: torch.Tensor, max_sq: torch.Tensor) -> torch.Tensor:
    torch.maximum(max_sq, exp_avg_sq, out=max_sq)
    return grad / (max_sq.abs() + 1e-8)
