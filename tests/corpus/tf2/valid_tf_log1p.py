# covers: log1p
import tensorflow as tf


def log_count_features(counts: tf.Tensor) -> tf.Tensor:
    return tf.math.log1p(tf.nn.relu(counts))


def signed_log(x: tf.Tensor) -> tf.Tensor:
    return tf.sign(x) * tf.math.log1p(tf.abs(x))
