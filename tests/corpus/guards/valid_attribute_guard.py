# covers: unguarded-domain
import torch


def predivide(grad: torch.Tensor, state) -> torch.Tensor:
    if state.factor > 1:
        grad.div_(state.factor)
    return grad
