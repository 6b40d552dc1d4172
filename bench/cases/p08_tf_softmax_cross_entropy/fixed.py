"""Classifier training step pieces written against raw TF2 ops (tensorflow/models PR#181 style)."""

import tensorflow as tf


def softmax_cross_entropy(logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    """logits: [batch, classes]; labels: [batch] integer class ids."""
    num_classes = logits.shape[-1]
    onehot = tf.one_hot(labels, num_classes)
    # log(softmax) is -inf for an underflowed class, and 0 * -inf = NaN: use the fused op
    per_example = tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits)
    return tf.reduce_mean(per_example)


def accuracy(logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    predictions = tf.argmax(logits, axis=-1, output_type=labels.dtype)
    return tf.reduce_mean(tf.cast(tf.equal(predictions, labels), tf.float32))
