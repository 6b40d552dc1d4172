import tensorflow as tf


def inverse_depth_loss(depth_pred: tf.Tensor, depth_true: tf.Tensor) -> tf.Tensor:
    """L1 loss in inverse-depth space; sky pixels have depth 0 in the labels."""
    inv_pred = tf.math.reciprocal(depth_pred)  # expect: reciprocal/unguarded-domain
    inv_true = tf.math.divide(1.0, depth_true)  # expect: div/unguarded-domain
    return tf.reduce_mean(tf.abs(inv_pred - inv_true))
