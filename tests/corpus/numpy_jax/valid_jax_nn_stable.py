# covers: log-sum-exp, log-softmax
import jax
import jax.numpy as jnp


def cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.sum(labels * log_probs, axis=-1))


def log_partition(logits: jax.Array) -> jax.Array:
    return jax.nn.logsumexp(logits, axis=-1)
