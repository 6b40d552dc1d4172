"""SAC-style tanh-Gaussian policy in Flax with a hand-written log-probability."""
import math

import flax.linen as nn
import jax
from jax import numpy as jnp

LOG_STD_MIN = -20.0
LOG_STD_MAX = 2.0


class TanhGaussianPolicy(nn.Module):
    action_dim: int
    hidden: int = 256

    @nn.compact
    def __call__(self, obs):
        x = nn.relu(nn.Dense(self.hidden)(obs))
        x = nn.relu(nn.Dense(self.hidden)(x))
        mean = nn.Dense(self.action_dim)(x)
        log_std = nn.Dense(self.action_dim)(x)
        std = jnp.exp(log_std)  # expect: exp/unguarded-domain
        return mean, std, log_std


def gaussian_log_prob(mean, log_std, u):
    z = (u - mean) * jnp.exp(-log_std)  # expect: exp/unguarded-domain
    return jnp.sum(-0.5 * z ** 2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)


def squash_correction(actions):
    return jnp.sum(jnp.log(1.0 - actions ** 2), axis=-1)  # expect: log/unguarded-domain


def sample_and_log_prob(params, policy, obs, key):
    mean, std, log_std = policy.apply(params, obs)
    u = mean + std * jax.random.normal(key, mean.shape)
    actions = jnp.tanh(u)
    logp = gaussian_log_prob(mean, log_std, u) - squash_correction(actions)
    return actions, logp


def actor_loss(params, policy, q_fn, obs, key, alpha=0.2):
    actions, logp = sample_and_log_prob(params, policy, obs, key)
    return jnp.mean(alpha * logp - q_fn(obs, actions))
