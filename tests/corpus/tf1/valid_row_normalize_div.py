# covers: unguarded-domain
import tensorflow.compat.v1 as tf


def row_normalize(counts):
    row_sums = tf.reduce_sum(counts, axis=1, keepdims=True)
    return tf.div(counts, tf.maximum(row_sums, 1.0))


def mean_embedding(embeddings, lengths):
    summed = tf.reduce_sum(embeddings, axis=1)
    denom = tf.expand_dims(tf.cast(lengths, tf.float32), -1)
    return tf.realdiv(summed, tf.maximum(denom, 1.0))
