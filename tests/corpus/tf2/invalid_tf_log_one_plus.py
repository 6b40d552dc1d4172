import tensorflow as tf


def log_count_features(counts: tf.Tensor) -> tf.Tensor:
    """Log-scaled count features for a tabular Keras model."""
    return tf.math.log(1.0 + counts)  # expect: log/log1p
