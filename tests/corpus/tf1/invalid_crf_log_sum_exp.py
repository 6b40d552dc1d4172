import tensorflow.compat.v1 as tf


def log_partition(unary_scores):
    """Normaliser of a per-position softmax written by hand."""
    return tf.log(tf.reduce_sum(tf.exp(unary_scores), axis=1))  # expect: log/log-sum-exp
