import tensorflow as tf


def log_ratio(numerator: tf.Tensor, denominator: tf.Tensor) -> tf.Tensor:
    numerator = tf.maximum(numerator, 1e-8)
    return tf.math.log(numerator / denominator)  # expect: log/unguarded-domain, div/unguarded-domain
