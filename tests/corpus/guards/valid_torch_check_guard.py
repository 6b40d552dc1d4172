# covers: unguarded-domain
import torch


def arange_count(start: torch.Tensor, end: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    torch._check(step != 0, lambda: "step must be nonzero")
    return (end - start) / step
