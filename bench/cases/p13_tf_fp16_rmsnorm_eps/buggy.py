"""Keras RMSNorm layer used under a float16 policy (mixed_float16 / float16 inference)."""

import tensorflow as tf


class RMSNorm(tf.keras.layers.Layer):
    def __init__(self, epsilon: float = 1e-8, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def build(self, input_shape: tf.TensorShape) -> None:
        self.scale = self.add_weight(name="scale", shape=(input_shape[-1],), initializer="ones")

    def call(self, x: tf.Tensor) -> tf.Tensor:
        # x: [batch, tokens, dim] in the layer's compute dtype (float16 here)
        mean_square = tf.reduce_mean(tf.square(x), axis=-1, keepdims=True)
        normed = x * tf.math.rsqrt(mean_square + self.epsilon)  # numcheck-bug: rsqrt
        return normed * tf.cast(self.scale, x.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon}
