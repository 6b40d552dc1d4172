# covers: unguarded-domain
import tensorflow as tf


def group_lasso_penalty(weights: tf.Tensor, groups: int) -> tf.Tensor:
    grouped = tf.reshape(weights, [groups, -1])
    return tf.reduce_sum(tf.sqrt(tf.reduce_sum(tf.square(grouped), axis=1) + 1e-12))


def embedding_distance(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    return tf.norm(a - b, axis=-1)


def l1_group_norms(x: tf.Tensor) -> tf.Tensor:
    return tf.norm(tf.nn.relu(x), ord=1, axis=-1)
