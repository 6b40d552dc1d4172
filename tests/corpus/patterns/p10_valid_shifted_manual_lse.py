# covers: log-sum-exp
import torch


def logsumexp_decomposed(x: torch.Tensor, dim: int) -> torch.Tensor:
    x_max = torch.amax(x, dim, keepdim=True)
    shifted = x - x_max
    return torch.log(torch.sum(torch.exp(shifted), dim, keepdim=True)) + x_max
