import tensorflow as tf


def energy_score(logits: tf.Tensor, temperature: float = 1.0) -> tf.Tensor:
    """Free energy used for out-of-distribution detection."""
    return -temperature * tf.math.log(tf.reduce_sum(tf.exp(logits / temperature), axis=-1))  # expect: log/log-sum-exp
