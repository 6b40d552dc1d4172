# covers: log-sum-exp
import tensorflow as tf


def energy_score(logits: tf.Tensor, temperature: float = 1.0) -> tf.Tensor:
    return -temperature * tf.reduce_logsumexp(logits / temperature, axis=-1)
