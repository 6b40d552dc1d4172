import jax
import jax.numpy as jnp


def count_features(counts: jax.Array, offsets: jax.Array) -> jax.Array:
    log_counts = jnp.log(1 + counts)  # expect: log/log1p
    log_offsets = jnp.log1p(offsets)  # expect: log1p/unguarded-domain
    return log_counts - log_offsets
