"""Bernoulli VAE loss (the GRIST benchmark's Figure 4): reconstruction + KL divergence."""

import torch
import torch.nn.functional as F


def vae_loss(
    x: torch.Tensor, recon_logits: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor
) -> torch.Tensor:
    """x: [batch, pixels] in [0, 1]; recon_logits: decoder output; mu, logvar: [batch, latent]."""
    # 1e-10 + 1 == 1 in float32, so the epsilon guarded nothing: use the logits directly
    bce = F.binary_cross_entropy_with_logits(recon_logits, x, reduction="none")
    reconstr_loss = torch.sum(bce, dim=1)
    latent_loss = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1)
    return torch.mean(reconstr_loss + latent_loss)
