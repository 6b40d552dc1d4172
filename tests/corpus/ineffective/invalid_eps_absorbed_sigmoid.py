import torch
import torch.nn as nn


class BernoulliDecoder(nn.Module):
    """GRIST's VAE bug, ported to PyTorch."""

    def __init__(self, latent: int, out_dim: int):
        super().__init__()
        self.fc = nn.Linear(latent, out_dim)

    def forward(self, z, x):
        x_reconstr_mean = torch.sigmoid(self.fc(z))
        ll = x * torch.log(1e-10 + x_reconstr_mean)
        ll = ll + (1 - x) * torch.log(1e-10 + 1 - x_reconstr_mean)  # expect: log/eps-absorbed
        return -ll.sum(dim=-1).mean()
