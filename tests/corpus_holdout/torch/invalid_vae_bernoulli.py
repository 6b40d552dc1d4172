"""Fully-connected VAE on binarised MNIST (the classic PyTorch example, lightly refactored)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, in_dim: int = 784, hidden: int = 400, latent: int = 20):
        super().__init__()
        self.fc = nn.Linear(in_dim, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)

    def forward(self, x):
        h = F.relu(self.fc(x.view(x.size(0), -1)))
        return self.mu(h), self.logvar(h)


class VAE(nn.Module):
    def __init__(self, latent: int = 20):
        super().__init__()
        self.encoder = Encoder(latent=latent)
        self.dec1 = nn.Linear(latent, 400)
        self.dec2 = nn.Linear(400, 784)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)  # expect: exp/unguarded-domain
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return self.dec2(F.relu(self.dec1(z)))

    def forward(self, x):
        mu, logvar = self.encoder(x)
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_logits, x, mu, logvar, beta=1.0):
    recon = torch.sigmoid(recon_logits)
    bce = F.binary_cross_entropy(recon, x.view(-1, 784), reduction="sum")  # expect: binary_cross_entropy/bce-sigmoid
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())  # expect: exp/unguarded-domain
    return bce + beta * kld


def train_epoch(model, loader, optimizer, device="cpu"):
    model.train()
    total = 0.0
    for data, _ in loader:
        data = data.to(device)
        optimizer.zero_grad()
        recon_logits, mu, logvar = model(data)
        loss = loss_function(recon_logits, data, mu, logvar)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader.dataset)
