# covers: unguarded-domain
import tensorflow as tf


def log_rate(rate: tf.Tensor) -> tf.Tensor:
    tf.debugging.assert_positive(rate, message="rate must be positive")
    return tf.math.log(rate)
