# covers: unguarded-domain
import torch
import torch.nn.functional as F
from torch import Tensor


def negative_binomial_nll(counts: Tensor, mu_raw: Tensor, theta_raw: Tensor) -> Tensor:
    mu = F.softplus(mu_raw)
    theta = F.softplus(theta_raw) + 1e-4
    counts = counts.clamp(min=0)
    log_theta_mu = torch.log(theta + mu)
    ll = theta * (torch.log(theta) - log_theta_mu)
    ll = ll + counts * (torch.log(mu) - log_theta_mu)
    ll = ll + torch.lgamma(counts + theta)
    ll = ll - torch.lgamma(theta)
    ll = ll - torch.lgamma(counts + 1)
    return -ll.mean()
