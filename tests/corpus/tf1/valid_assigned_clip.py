# covers: discarded-guard, unguarded-domain
import tensorflow.compat.v1 as tf


def weighted_log_loss(labels, probs, weights):
    probs = tf.clip_by_value(probs, 1e-8, 1.0)
    losses = -labels * tf.log(probs) * weights
    return tf.reduce_sum(losses) / tf.maximum(tf.reduce_sum(weights), 1e-8)
