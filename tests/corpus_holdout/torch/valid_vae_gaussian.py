# covers: bce-sigmoid, unguarded-domain
"""Convolutional beta-VAE: clamped log-variances, a logits-space Bernoulli term, a Gaussian decoder."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class ConvEncoder(nn.Module):
    def __init__(self, latent_dim: int = 32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
            nn.Flatten(),
        )
        self.head = nn.Linear(64 * 7 * 7, 2 * latent_dim)

    def forward(self, x):
        mu, logvar = self.head(self.net(x)).chunk(2, dim=-1)
        return mu, logvar


def sample_latent(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    half_logvar = torch.clamp(0.5 * logvar, max=10.0)
    std = torch.exp(half_logvar)
    return mu + std * torch.randn_like(std)


def kl_divergence(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    logvar = logvar.clamp(min=-30.0, max=20.0)
    return -0.5 * torch.sum(1 + logvar - mu ** 2 - logvar.exp(), dim=-1)


def bernoulli_nll(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits, target, reduction="none").flatten(1).sum(-1)


def gaussian_nll(mean: torch.Tensor, raw_scale: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    var = F.softplus(raw_scale) + 1e-4
    sq = (target - mean) ** 2
    nll = 0.5 * (torch.log(var) + sq / var + math.log(2 * math.pi))
    return nll.flatten(1).sum(-1)


def beta_vae_loss(encoder: ConvEncoder, decoder: nn.Module, x: torch.Tensor, beta: float = 4.0):
    mu, logvar = encoder(x)
    z = sample_latent(mu, logvar)
    logits = decoder(z)
    recon = bernoulli_nll(logits, x)
    return (recon + beta * kl_divergence(mu, logvar)).mean()
