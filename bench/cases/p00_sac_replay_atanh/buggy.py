"""Tanh-squashed Gaussian policy: log-likelihood of replay-buffer actions (AWAC / BC term)."""

import torch
from torch import nn


class TanhGaussianPolicy(nn.Module):
    def __init__(self, obs_dim: int = 6, act_dim: int = 2, hidden: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, 2 * act_dim)
        )

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        mu, log_std = self.net(obs).chunk(2, dim=-1)
        log_std = log_std.clamp(-20.0, 2.0)
        pre_tanh = torch.atanh(actions)  # numcheck-bug: atanh
        normal = torch.distributions.Normal(mu, log_std.exp())
        logp = normal.log_prob(pre_tanh).sum(dim=-1)
        logp = logp - torch.log(1.0 - actions.pow(2) + 1e-6).sum(dim=-1)
        return logp

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        # actions come from the replay buffer, clipped by the environment to [-1, 1]
        return -self.log_prob(obs, actions).mean()
