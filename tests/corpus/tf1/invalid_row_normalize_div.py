import tensorflow.compat.v1 as tf


def row_normalize(counts):
    """Co-occurrence counts to transition probabilities; unseen words have empty rows."""
    row_sums = tf.reduce_sum(counts, axis=1, keepdims=True)
    return tf.div(counts, row_sums)  # expect: div/unguarded-domain


def mean_embedding(embeddings, lengths):
    summed = tf.reduce_sum(embeddings, axis=1)
    return tf.realdiv(summed, tf.expand_dims(tf.cast(lengths, tf.float32), -1))  # expect: div/unguarded-domain
