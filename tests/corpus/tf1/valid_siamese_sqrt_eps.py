# covers: unguarded-domain
import tensorflow.compat.v1 as tf


def contrastive_loss(left, right, y, margin=1.0):
    d = tf.sqrt(tf.reduce_sum(tf.square(left - right), 1) + 1e-6)
    similar = y * tf.square(d)
    dissimilar = (1 - y) * tf.square(tf.maximum(margin - d, 0))
    return tf.reduce_mean(similar + dissimilar) / 2
