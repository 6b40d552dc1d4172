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
        norm = tf.norm(embedding, axis=-1, keepdims=True)
        normalized = embedding / norm  # numcheck-bug: div
        return normalized

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units}
