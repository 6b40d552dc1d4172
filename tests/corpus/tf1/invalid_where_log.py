import tensorflow.compat.v1 as tf


def log_mel_features(mel):
    """Log-mel energies; digital silence gives exact zeros."""
    return tf.where(mel > 0, tf.log(mel), tf.zeros_like(mel))  # expect: log/where-grad-leak
