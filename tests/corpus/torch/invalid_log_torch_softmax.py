import torch
from torch import Tensor


def soft_nearest_neighbour_loss(sim: Tensor, same_class: Tensor, tau: float = 0.1) -> Tensor:
    log_probs = torch.log(torch.softmax(sim / tau, dim=-1))  # expect: log/log-softmax
    return -(log_probs * same_class).sum(dim=-1).mean()
