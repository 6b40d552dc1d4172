# covers: log-softmax
import torch
from torch import Tensor


def soft_nearest_neighbour_loss(sim: Tensor, same_class: Tensor, tau: float = 0.1) -> Tensor:
    log_probs = torch.log_softmax(sim / tau, dim=-1)
    return -(log_probs * same_class).sum(dim=-1).mean()
