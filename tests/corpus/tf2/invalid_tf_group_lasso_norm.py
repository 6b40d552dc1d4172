import tensorflow as tf


def group_lasso_penalty(weights: tf.Tensor, groups: int) -> tf.Tensor:
    """Group lasso on a dense kernel: whole input groups are driven to zero."""
    grouped = tf.reshape(weights, [groups, -1])
    return tf.reduce_sum(tf.norm(grouped, axis=1))  # expect: sqrt/unguarded-domain


def dead_unit_norms(x: tf.Tensor) -> tf.Tensor:
    hidden = tf.nn.relu(x)
    return tf.linalg.norm(hidden, axis=-1)  # expect: sqrt/unguarded-domain
