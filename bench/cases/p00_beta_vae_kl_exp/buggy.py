"""beta-VAE objective: Gaussian reconstruction term plus a weighted KL divergence."""

import torch
import torch.nn.functional as F


def beta_vae_loss(
    x: torch.Tensor,
    x_recon: torch.Tensor,
    mu: torch.Tensor,
    logvar: torch.Tensor,
    beta: float = 4.0,
) -> torch.Tensor:
    """x, x_recon: [batch, pixels]; mu, logvar: [batch, latent] raw encoder outputs."""
    batch = x.shape[0]
    recon = F.mse_loss(x_recon, x, reduction="sum") / batch
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1)  # numcheck-bug: exp
    return recon + beta * kl.mean()
