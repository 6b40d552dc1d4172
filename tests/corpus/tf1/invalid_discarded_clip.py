import tensorflow.compat.v1 as tf


def weighted_log_loss(labels, probs, weights):
    tf.clip_by_value(probs, 1e-8, 1.0)  # expect: clamp/discarded-guard
    losses = -labels * tf.log(probs) * weights  # expect: log/unguarded-domain
    return tf.reduce_sum(losses) / tf.reduce_sum(weights)  # expect: div/unguarded-domain
