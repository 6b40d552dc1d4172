"""Keras embedding head for metric learning: projection followed by L2 normalisation."""

import tensorflow as tf


class EmbeddingHead(tf.keras.layers.Layer):
    def __init__(self, units: int = 8, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.dense = tf.keras.layers.Dense(units)

    def call(self, features: tf.Tensor) -> tf.Tensor:
        # features: [batch, in_features]; zero rows come from empty (padded) items
        embedding = self.dense(features)
        # an all-zero embedding has norm 0 (0 / 0); l2_normalize floors the squared norm
        normalized = tf.math.l2_normalize(embedding, axis=-1, epsilon=1e-12)
        return normalized

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units}
