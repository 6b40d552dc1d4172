import jax
import jax.numpy as jnp


def elu(x: jax.Array, alpha: float = 1.0) -> jax.Array:
    """ELU with the negative branch computed for every input."""
    neg = alpha * (jnp.exp(x) - 1.0)  # expect: exp/expm1
    return jnp.maximum(x, 0.0) + jnp.minimum(neg, 0.0)
