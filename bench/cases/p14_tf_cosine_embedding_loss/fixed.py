"""Cosine embedding loss for siamese sentence encoders, TF2."""

import tensorflow as tf


def cosine_similarity(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    # a zero embedding has norm 0 (0 / 0): normalise with a floor on the squared norm
    a = tf.math.l2_normalize(a, axis=-1, epsilon=1e-12)
    b = tf.math.l2_normalize(b, axis=-1, epsilon=1e-12)
    return tf.reduce_sum(a * b, axis=-1)


def cosine_embedding_loss(
    a: tf.Tensor, b: tf.Tensor, similar: tf.Tensor, margin: float = 0.2
) -> tf.Tensor:
    """a, b: [batch, dim] sentence embeddings (mean-pooled, zero for an empty sentence);
    similar: [batch] bool, True for paraphrase pairs."""
    cos = cosine_similarity(a, b)
    positive = 1.0 - cos
    negative = tf.nn.relu(cos - margin)
    return tf.reduce_mean(tf.where(similar, positive, negative))
