# covers: where-grad-leak, discarded-guard
"""Guards that do take effect: assigned clips and double where in TF, JAX and NumPy."""
import jax.numpy as jnp
import numpy as np
import tensorflow as tf


def tf_poisson_deviance(y_true, rate):
    rate = tf.clip_by_value(rate, 1e-6, 1e6)
    log_rate = tf.math.log(rate)
    return 2.0 * tf.reduce_mean(tf.math.xlogy(y_true, y_true) - y_true * log_rate - (y_true - rate))


def tf_safe_log(x):
    safe = tf.where(x > 0.0, x, tf.ones_like(x))
    return tf.where(x > 0.0, tf.math.log(safe), tf.zeros_like(x))


def jax_safe_sqrt(x):
    safe = jnp.where(x > 0.0, x, 1.0)
    return jnp.where(x > 0.0, jnp.sqrt(safe), 0.0)


def jax_clipped_log(p):
    p = jnp.clip(p, 1e-7, 1.0)
    return jnp.log(p)


def numpy_feature_log(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 1e-9, None)
    return np.log(x)


def summarize(rates, y):
    return {
        "deviance": float(tf_poisson_deviance(y, rates)),
        "mean_log_rate": float(tf.reduce_mean(tf_safe_log(rates))),
    }
