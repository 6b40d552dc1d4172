"""Group-sparsity (group lasso) activity regulariser on ReLU activations, TF2."""

import tensorflow as tf


def group_sparsity_penalty(activations: tf.Tensor, groups: int = 4) -> tf.Tensor:
    """activations: [batch, units] after a ReLU; units split into equal groups.

    Returns the mean over the batch of the sum of the groups' L2 norms.
    """
    batch = tf.shape(activations)[0]
    grouped = tf.reshape(activations, [batch, groups, -1])
    norms = tf.norm(grouped, axis=-1)  # numcheck-bug: sqrt
    return tf.reduce_mean(tf.reduce_sum(norms, axis=-1))


def regularized_loss(
    activations: tf.Tensor, task_loss: tf.Tensor, weight: float = 1e-3
) -> tf.Tensor:
    return task_loss + weight * group_sparsity_penalty(activations)
