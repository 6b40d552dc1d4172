import tensorflow as tf


class ScaleByFeature(tf.keras.layers.Layer):
    """Divides activations by a per-example scale passed in by the model."""

    def call(self, inputs, scale):
        return inputs / scale  # expect: div/unguarded-domain
