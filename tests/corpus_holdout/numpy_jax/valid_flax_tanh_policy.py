# covers: unguarded-domain
"""Tanh-Gaussian actor in Flax: clipped log-std and the stable softplus form of the squash correction."""
import math

import flax.linen as nn
import jax
from jax import numpy as jnp

LOG_2PI = math.log(2 * math.pi)


class Actor(nn.Module):
    action_dim: int

    @nn.compact
    def __call__(self, obs):
        h = nn.tanh(nn.Dense(256)(obs))
        h = nn.tanh(nn.Dense(256)(h))
        mean = nn.Dense(self.action_dim)(h)
        log_std = jnp.clip(nn.Dense(self.action_dim)(h), -20.0, 2.0)
        return mean, log_std


def log_prob(mean, log_std, u):
    log_std = jnp.clip(log_std, -20.0, 2.0)
    std = jnp.exp(log_std)
    z = (u - mean) / std
    return jnp.sum(-0.5 * z ** 2 - log_std - 0.5 * LOG_2PI, axis=-1)


def squash_log_det(u):
    # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))
    return jnp.sum(2.0 * (jnp.log(2.0) - u - jax.nn.softplus(-2.0 * u)), axis=-1)


def sample(params, actor, obs, key):
    mean, log_std = actor.apply(params, obs)
    std = jnp.exp(jnp.clip(log_std, -20.0, 2.0))
    u = mean + std * jax.random.normal(key, mean.shape)
    logp = log_prob(mean, log_std, u) - squash_log_det(u)
    return jnp.tanh(u), logp


def temperature_loss(log_alpha, logp, target_entropy):
    return -jnp.mean(log_alpha * jax.lax.stop_gradient(logp + target_entropy))
