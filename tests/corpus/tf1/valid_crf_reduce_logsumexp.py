# covers: log-sum-exp
import tensorflow.compat.v1 as tf


def log_partition(unary_scores):
    return tf.reduce_logsumexp(unary_scores, axis=1)
