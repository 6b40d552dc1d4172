import tensorflow as tf


class SumNormalize(tf.keras.layers.Layer):
    """Turns non-negative attention energies into weights."""

    def call(self, inputs):
        energies = tf.nn.relu(inputs)
        return energies / tf.reduce_sum(energies, axis=-1, keepdims=True)  # expect: div/unguarded-domain
