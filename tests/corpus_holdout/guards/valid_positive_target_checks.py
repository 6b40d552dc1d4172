# covers: unguarded-domain
"""Gamma / log-normal likelihoods for positive targets, protected by explicit validation."""
import torch
from torch import Tensor


def gamma_nll(y: Tensor, shape: Tensor, rate: Tensor) -> Tensor:
    if (shape <= 0).any():
        raise ValueError("shape must be strictly positive")
    if (rate <= 0).any():
        raise ValueError("rate must be strictly positive")
    assert (y > 0).all(), "gamma targets must be positive"
    ll = shape * torch.log(rate) - torch.lgamma(shape) + (shape - 1) * torch.log(y) - rate * y
    return -ll.mean()


def lognormal_nll(y: Tensor, mu: Tensor, sigma: Tensor) -> Tensor:
    assert sigma.min() > 0
    assert y.min() > 0
    log_y = torch.log(y)
    z = (log_y - mu) / sigma
    return (log_y + torch.log(sigma) + 0.5 * z ** 2).mean()


def mean_log_value(x: Tensor) -> Tensor:
    if (x > 0).all():
        return torch.log(x).mean(dim=-1)
    return torch.full(x.shape[:-1], float("nan"))


def fit_gamma_rate(y: Tensor, shape: Tensor, steps: int = 100) -> Tensor:
    log_rate = torch.zeros_like(shape, requires_grad=True)
    opt = torch.optim.Adam([log_rate], lr=0.05)
    for _ in range(steps):
        rate = torch.nn.functional.softplus(log_rate) + 1e-4
        loss = gamma_nll(y, shape, rate)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return log_rate.detach()
