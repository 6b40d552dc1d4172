"""Angular loss between predicted and ground-truth 3-D directions (gaze / camera rays), TF2."""

import tensorflow as tf


def angular_loss(pred: tf.Tensor, target: tf.Tensor) -> tf.Tensor:
    """pred, target: [batch, 3] unnormalised direction vectors.

    Returns the mean angle in radians between the two directions.
    """
    u = tf.math.l2_normalize(pred, axis=-1)
    v = tf.math.l2_normalize(target, axis=-1)
    cos = tf.reduce_sum(u * v, axis=-1)
    # rounding puts the cosine of parallel vectors slightly above 1 (acos -> NaN), and the
    # derivative of acos is infinite at +-1: clip strictly inside
    cos = tf.clip_by_value(cos, -1.0 + 1e-6, 1.0 - 1e-6)
    angle = tf.acos(cos)
    return tf.reduce_mean(angle)
