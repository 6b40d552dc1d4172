import tensorflow as tf


def categorical_focal_loss(y_true: tf.Tensor, y_pred: tf.Tensor, gamma: float = 2.0) -> tf.Tensor:
    tf.clip_by_value(y_pred, 1e-7, 1.0)  # expect: clamp/discarded-guard
    ce = -y_true * tf.math.log(y_pred)  # expect: log/unguarded-domain
    weight = tf.pow(1.0 - y_pred, gamma)  # expect: pow/unguarded-domain
    return tf.reduce_sum(weight * ce, axis=-1)
