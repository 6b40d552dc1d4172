import torch
import torch.nn as nn


class VAEHead(nn.Module):
    def __init__(self, hidden: int, latent: int):
        super().__init__()
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)

    def forward(self, h):
        mu = self.mu(h)
        logvar = self.logvar(h)
        std = torch.exp(0.5 * logvar)  # expect: exp/unguarded-domain
        z = mu + std * torch.randn_like(std)
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)  # expect: exp/unguarded-domain
        return z, kld.mean()
