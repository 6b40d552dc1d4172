# covers: unguarded-domain
import flax.linen as nn
import jax.numpy as jnp


class Standardize(nn.Module):
    @nn.compact
    def __call__(self, x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        return (x - mean) / (jnp.std(x, axis=-1, keepdims=True) + 1e-6)
