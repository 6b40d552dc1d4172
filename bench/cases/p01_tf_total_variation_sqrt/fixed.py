"""Image restoration objective for a TF2 model: content loss plus isotropic total variation."""

import tensorflow as tf


def isotropic_total_variation(images: tf.Tensor) -> tf.Tensor:
    """images: [batch, height, width, channels]."""
    dy = images[:, 1:, :-1, :] - images[:, :-1, :-1, :]
    dx = images[:, :-1, 1:, :] - images[:, :-1, :-1, :]
    # flat regions have dx = dy = 0, where the derivative of sqrt is infinite
    tv = tf.sqrt(tf.square(dx) + tf.square(dy) + 1e-8)
    return tf.reduce_sum(tv, axis=[1, 2, 3])


def restoration_loss(restored: tf.Tensor, clean: tf.Tensor, tv_weight: float = 1e-2) -> tf.Tensor:
    """restored, clean: [batch, height, width, channels] in [0, 1]."""
    content = tf.reduce_mean(tf.abs(restored - clean), axis=[1, 2, 3])
    return tf.reduce_mean(content + tv_weight * isotropic_total_variation(restored))
