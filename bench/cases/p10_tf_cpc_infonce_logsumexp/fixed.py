"""Contrastive predictive coding (InfoNCE) loss with dot-product scores, TF2."""

import tensorflow as tf


def info_nce(context: tf.Tensor, future: tf.Tensor) -> tf.Tensor:
    """context, future: [batch, dim]; row i of future is the positive for row i of context,
    the other rows are negatives."""
    logits = tf.matmul(context, future, transpose_b=True)
    positive = tf.linalg.diag_part(logits)
    log_denominator = tf.reduce_logsumexp(logits, axis=-1)  # max-shifted, cannot overflow
    return tf.reduce_mean(log_denominator - positive)


def cpc_accuracy(context: tf.Tensor, future: tf.Tensor) -> tf.Tensor:
    logits = tf.matmul(context, future, transpose_b=True)
    hits = tf.equal(tf.argmax(logits, axis=-1), tf.range(tf.shape(logits)[0], dtype=tf.int64))
    return tf.reduce_mean(tf.cast(hits, tf.float32))
