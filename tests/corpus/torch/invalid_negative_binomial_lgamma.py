import torch
import torch.nn.functional as F
from torch import Tensor


def negative_binomial_nll(counts: Tensor, mu_raw: Tensor, theta: Tensor) -> Tensor:
    """scVI-style count likelihood; theta is the raw dispersion output."""
    mu = F.softplus(mu_raw)
    log_theta_mu = torch.log(theta + mu)  # expect: log/unguarded-domain
    ll = theta * (torch.log(theta) - log_theta_mu)  # expect: log/unguarded-domain
    ll = ll + counts * (torch.log(mu) - log_theta_mu)
    ll = ll + torch.lgamma(counts + theta)  # expect: lgamma/unguarded-domain
    ll = ll - torch.lgamma(theta)  # expect: lgamma/unguarded-domain
    ll = ll - torch.lgamma(counts + 1)  # expect: lgamma/unguarded-domain
    return -ll.mean()
