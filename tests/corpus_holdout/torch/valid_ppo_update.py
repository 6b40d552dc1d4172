# covers: unguarded-domain, log-softmax
"""PPO for continuous control: Gaussian policy with a clamped log-std and a bounded log-ratio."""
import math

import torch
import torch.nn as nn
from torch.distributions import Categorical

LOG_2PI = math.log(2 * math.pi)


class GaussianActor(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()
        self.mu = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, act_dim))
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))

    def forward(self, obs, actions):
        mu = self.mu(obs)
        log_std = self.log_std.clamp(-20.0, 2.0)
        std = log_std.exp()
        z = (actions - mu) / std
        logp = -0.5 * (z ** 2 + 2 * log_std + LOG_2PI)
        return logp.sum(-1), log_std.sum()


def ppo_objective(actor, obs, actions, old_logp, advantages, clip=0.2):
    logp, _ = actor(obs, actions)
    log_ratio = (logp - old_logp).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    adv = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - clip, 1.0 + clip) * adv
    return -torch.min(unclipped, clipped).mean()


def discrete_entropy_bonus(logits: torch.Tensor) -> torch.Tensor:
    return Categorical(logits=logits).entropy().mean()


def gae(rewards, values, dones, gamma=0.99, lam=0.95):
    advantages = torch.zeros_like(rewards)
    last = 0.0
    for t in reversed(range(rewards.size(0) - 1)):
        delta = rewards[t] + gamma * values[t + 1] * (1 - dones[t]) - values[t]
        last = delta + gamma * lam * (1 - dones[t]) * last
        advantages[t] = last
    return advantages
