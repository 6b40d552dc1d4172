"""Bernoulli VAE loss (the GRIST benchmark's Figure 4): reconstruction + KL divergence."""

import torch


def vae_loss(
    x: torch.Tensor, recon_logits: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor
) -> torch.Tensor:
    """x: [batch, pixels] in [0, 1]; recon_logits: decoder output; mu, logvar: [batch, latent]."""
    x_reconstr_mean = torch.sigmoid(recon_logits)
    log_p = torch.log(1e-10 + x_reconstr_mean)
    log_one_minus_p = torch.log(1e-10 + 1 - x_reconstr_mean)  # numcheck-bug: log
    reconstr_loss = -torch.sum(x * log_p + (1 - x) * log_one_minus_p, dim=1)
    latent_loss = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1)
    return torch.mean(reconstr_loss + latent_loss)
