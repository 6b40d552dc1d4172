# covers: discarded-guard, unguarded-domain
import tensorflow as tf


def categorical_focal_loss(y_true: tf.Tensor, y_pred: tf.Tensor, gamma: float = 2.0) -> tf.Tensor:
    y_pred = tf.clip_by_value(y_pred, 1e-6, 1.0 - 1e-6)
    ce = -y_true * tf.math.log(y_pred)
    weight = tf.pow(1.0 - y_pred, gamma)
    return tf.reduce_sum(weight * ce, axis=-1)
