"""Pure-JAX loss zoo used with optax: a safe-log helper, Poisson regression, triplet embeddings."""
import jax
import jax.numpy as jnp
import optax


def safe_log(x):
    return jnp.where(x > 0, jnp.log(x), 0.0)  # expect: log/where-grad-leak


def poisson_regression_loss(params, features, counts):
    log_rate = features @ params["w"] + params["b"]
    rate = jnp.exp(log_rate)  # expect: exp/unguarded-domain
    return jnp.mean(rate - counts * log_rate)


def triplet_loss(anchor, positive, negative, margin=0.3):
    d_ap = jnp.sqrt(jnp.sum((anchor - positive) ** 2, axis=-1))  # expect: sqrt/unguarded-domain
    d_an = jnp.sqrt(jnp.sum((anchor - negative) ** 2, axis=-1) + 1e-12)
    return jnp.mean(jax.nn.relu(d_ap - d_an + margin))


def kl_to_uniform(probs):
    n = probs.shape[-1]
    return jnp.sum(probs * safe_log(probs * n), axis=-1)


optimizer = optax.adam(1e-3)


@jax.jit
def train_step(params, opt_state, batch):
    loss, grads = jax.value_and_grad(poisson_regression_loss)(params, batch["x"], batch["y"])
    updates, opt_state = optimizer.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state, loss
