import jax
import jax.numpy as jnp


def entropy(p: jax.Array) -> jax.Array:
    """Entropy of a categorical distribution with exact zeros (JAX FAQ example)."""
    log_p = jnp.where(p > 0, jnp.log(p), 0.0)  # expect: log/where-grad-leak
    return -jnp.sum(p * log_p, axis=-1)
