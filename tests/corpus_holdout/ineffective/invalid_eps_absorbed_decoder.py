"""Bernoulli decoder likelihood and a coverage penalty where the epsilon is added before the 1."""
import torch
import torch.nn as nn


class BernoulliDecoder(nn.Module):
    def __init__(self, latent_dim: int, out_dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent_dim, 512), nn.ReLU(), nn.Linear(512, out_dim))

    def forward(self, z, x):
        probs = torch.clamp(self.net(z), 0.0, 1.0)
        pos = x * torch.log(probs + 1e-10)
        neg = (1 - x) * torch.log(1e-10 + 1 - probs)  # expect: log/eps-absorbed
        return -(pos + neg).sum(-1)


def coverage_penalty(attn: torch.Tensor) -> torch.Tensor:
    """Penalise source tokens that have already received (almost) all of the attention mass."""
    coverage = attn.cumsum(dim=1).clamp(0.0, 1.0)
    return -torch.log(1e-12 + 1.0 - coverage).mean()  # expect: log/eps-absorbed


def train(decoder: BernoulliDecoder, batches, steps: int = 1000, lr: float = 1e-3):
    opt = torch.optim.Adam(decoder.parameters(), lr=lr)
    history = []
    for step, (z, x, attn) in enumerate(batches):
        if step >= steps:
            break
        loss = decoder(z, x).mean() + 0.1 * coverage_penalty(attn)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.item())
    return history
