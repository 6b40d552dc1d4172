# covers: unguarded-domain
import tensorflow.compat.v1 as tf


def batch_norm(x, gamma, beta):
    mean, variance = tf.nn.moments(x, axes=[0])
    return tf.nn.batch_normalization(x, mean, variance, beta, gamma, variance_epsilon=1e-3)
