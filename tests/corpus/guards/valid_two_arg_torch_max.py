# covers: unguarded-domain
import torch


def scaled(x: torch.Tensor, scale: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    scale = torch.max(scale, torch.tensor([eps]))
    return x / scale
