# covers: log1p
import jax
import jax.numpy as jnp


def count_features(counts: jax.Array, offsets: jax.Array) -> jax.Array:
    log_counts = jnp.log1p(jnp.abs(counts))
    log_offsets = jnp.log1p(jnp.clip(offsets, 0.0, None))
    return log_counts - log_offsets
