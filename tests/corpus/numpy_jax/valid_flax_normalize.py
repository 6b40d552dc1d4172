# covers: manual-normalize
import flax.linen as nn
import jax.numpy as jnp


class ProjectionHead(nn.Module):
    features: int = 128

    @nn.compact
    def __call__(self, x):
        z = nn.Dense(self.features)(nn.relu(nn.Dense(512)(x)))
        return z / (jnp.linalg.norm(z, axis=-1, keepdims=True) + 1e-6)
