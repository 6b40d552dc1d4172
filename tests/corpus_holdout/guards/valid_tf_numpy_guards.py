# covers: unguarded-domain, discarded-guard
"""TF2 and NumPy guards: tf.maximum, reassigned clip_by_value, np.clip and early exits."""
import numpy as np
import tensorflow as tf


def weighted_bce(y_true, y_prob, pos_weight=2.0):
    y_prob = tf.clip_by_value(y_prob, 1e-6, 1.0 - 1e-6)
    pos = pos_weight * y_true * tf.math.log(y_prob)
    neg = (1.0 - y_true) * tf.math.log(1.0 - y_prob)
    return -tf.reduce_mean(pos + neg)


def rms_normalize(x, axis=-1):
    ms = tf.reduce_mean(tf.square(x), axis=axis, keepdims=True)
    return x * tf.math.rsqrt(tf.maximum(ms, 1e-6))


def inverse_sqrt_decay(step, warmup=4000):
    step = tf.maximum(tf.cast(step, tf.float32), 1.0)
    return tf.minimum(tf.math.rsqrt(step), step / (warmup ** 1.5))


def normalize_rows(counts: np.ndarray) -> np.ndarray:
    totals = np.clip(counts.sum(axis=1, keepdims=True), 1.0, None)
    return counts / totals


def log10_features(x: np.ndarray) -> np.ndarray:
    if (x <= 0).any():
        raise ValueError("log-scale features must be positive")
    return np.log10(x)


def log_returns(prices: np.ndarray) -> np.ndarray:
    assert prices.min() > 0, "prices must be positive"
    return np.diff(np.log(prices))
