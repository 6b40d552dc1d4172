# covers: unguarded-domain
import tensorflow as tf


def inverse_depth_loss(raw_depth: tf.Tensor, depth_true: tf.Tensor) -> tf.Tensor:
    depth_pred = tf.nn.softplus(raw_depth) + 1e-3
    inv_pred = tf.math.reciprocal(depth_pred)
    inv_true = tf.math.divide(1.0, tf.maximum(depth_true, 1e-3))
    return tf.reduce_mean(tf.abs(inv_pred - inv_true))
