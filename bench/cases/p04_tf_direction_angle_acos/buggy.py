"""Angular loss between predicted and ground-truth 3-D directions (gaze / camera rays), TF2."""

import tensorflow as tf


def angular_loss(pred: tf.Tensor, target: tf.Tensor) -> tf.Tensor:
    """pred, target: [batch, 3] unnormalised direction vectors.

    Returns the mean angle in radians between the two directions.
    """
    u = tf.math.l2_normalize(pred, axis=-1)
    v = tf.math.l2_normalize(target, axis=-1)
    cos = tf.reduce_sum(u * v, axis=-1)
    angle = tf.acos(cos)  # numcheck-bug: acos
    return tf.reduce_mean(angle)
