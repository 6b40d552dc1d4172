# covers: expm1
import jax
import jax.numpy as jnp


def elu(x: jax.Array, alpha: float = 1.0) -> jax.Array:
    neg = alpha * jnp.expm1(jnp.clip(x, -20.0, 0.0))
    return jnp.maximum(x, 0.0) + neg
