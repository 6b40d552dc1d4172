"""Cosine embedding loss for siamese sentence encoders, TF2."""

import tensorflow as tf


def cosine_similarity(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    dot = tf.reduce_sum(a * b, axis=-1)
    return dot / (tf.norm(a, axis=-1) * tf.norm(b, axis=-1))  # numcheck-bug: div


def cosine_embedding_loss(
    a: tf.Tensor, b: tf.Tensor, similar: tf.Tensor, margin: float = 0.2
) -> tf.Tensor:
    """a, b: [batch, dim] sentence embeddings (mean-pooled, zero for an empty sentence);
    similar: [batch] bool, True for paraphrase pairs."""
    cos = cosine_similarity(a, b)
    positive = 1.0 - cos
    negative = tf.nn.relu(cos - margin)
    return tf.reduce_mean(tf.where(similar, positive, negative))
