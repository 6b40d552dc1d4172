# covers: where-grad-leak, unguarded-domain
"""JAX losses with the double-where idiom, clipped exponentials and epsilon-shifted distances."""
import jax
import jax.numpy as jnp
import optax


def safe_log(x):
    safe_x = jnp.where(x > 0, x, 1.0)
    return jnp.where(x > 0, jnp.log(safe_x), 0.0)


def safe_norm(v, axis=-1):
    sq = jnp.sum(v * v, axis=axis)
    safe_sq = jnp.where(sq > 0, sq, 1.0)
    return jnp.where(sq > 0, jnp.sqrt(safe_sq), 0.0)


def poisson_nll(log_rate, counts):
    log_rate = jnp.clip(log_rate, -30.0, 30.0)
    return jnp.mean(jnp.exp(log_rate) - counts * log_rate)


def contrastive_pair_loss(z1, z2, same, margin=1.0):
    d2 = jnp.sum((z1 - z2) ** 2, axis=-1)
    d = jnp.sqrt(d2 + 1e-9)
    pos = same * d2
    neg = (1.0 - same) * jax.nn.relu(margin - d) ** 2
    return jnp.mean(pos + neg)


def binary_xent_from_logits(logits, labels):
    return jnp.mean(optax.sigmoid_binary_cross_entropy(logits, labels))
