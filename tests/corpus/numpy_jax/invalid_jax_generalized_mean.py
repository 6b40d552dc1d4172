import jax
import jax.numpy as jnp


def generalized_mean(x: jax.Array, p: jax.Array) -> jax.Array:
    """Power mean with a learned exponent p."""
    return jnp.mean(x ** p, axis=-1) ** (1.0 / p)  # expect: pow/unguarded-domain, div/unguarded-domain
