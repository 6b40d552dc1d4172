import tensorflow as tf


def pairwise_distance(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    sq = tf.reduce_sum(tf.square(a - b), axis=-1)
    return tf.where(sq > 0.0, tf.sqrt(sq), tf.zeros_like(sq))  # expect: sqrt/where-grad-leak
