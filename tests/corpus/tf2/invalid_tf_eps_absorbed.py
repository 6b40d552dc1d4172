import tensorflow as tf


def bernoulli_reconstruction_loss(x: tf.Tensor, x_hat: tf.Tensor) -> tf.Tensor:
    p = tf.clip_by_value(x_hat, 0.0, 1.0)
    ll = x * tf.math.log(p + 1e-10)
    ll += (1.0 - x) * tf.math.log(1e-10 + 1.0 - p)  # expect: log/eps-absorbed
    return -tf.reduce_sum(ll, axis=-1)
