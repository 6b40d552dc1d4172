# covers: where-grad-leak
import jax
import jax.numpy as jnp


def entropy(p: jax.Array) -> jax.Array:
    log_p = jnp.where(p > 0, jnp.log(jnp.where(p > 0, p, jnp.ones_like(p))), 0.0)
    return -jnp.sum(p * log_p, axis=-1)
