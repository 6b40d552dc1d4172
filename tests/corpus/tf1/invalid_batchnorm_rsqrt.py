import tensorflow.compat.v1 as tf


def batch_norm(x, gamma, beta):
    """Hand-written batch normalisation without an epsilon."""
    mean, variance = tf.nn.moments(x, axes=[0])
    inv = tf.rsqrt(variance)  # expect: rsqrt/unguarded-domain
    return (x - mean) * inv * gamma + beta
