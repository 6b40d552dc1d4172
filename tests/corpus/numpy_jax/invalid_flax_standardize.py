import flax.linen as nn
import jax.numpy as jnp


class Standardize(nn.Module):
    """Per-example feature standardisation inside a Flax model."""

    @nn.compact
    def __call__(self, x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        return (x - mean) / jnp.std(x, axis=-1, keepdims=True)  # expect: div/unguarded-domain
