import torch
from torch import Tensor
from torch.distributions import Normal


def log_prob_of_action(mean: Tensor, log_std: Tensor, action: Tensor) -> Tensor:
    """Log-probability of a replayed tanh-squashed action (SAC / behaviour cloning)."""
    pre_tanh = torch.atanh(action)  # expect: atanh/unguarded-domain
    std = log_std.clamp(-20, 2).exp()
    log_prob = Normal(mean, std).log_prob(pre_tanh)
    log_prob = log_prob - torch.log(1 - action.pow(2) + 1e-6)  # expect: log/unguarded-domain
    return log_prob.sum(-1)
