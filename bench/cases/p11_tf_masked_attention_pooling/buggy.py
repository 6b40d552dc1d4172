"""Keras attention pooling over a variable-length set of item embeddings."""

import numpy as np
import tensorflow as tf


class MaskedAttentionPooling(tf.keras.layers.Layer):
    def __init__(self, hidden: int = 8, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.hidden = hidden
        self.proj = tf.keras.layers.Dense(hidden, activation="tanh")
        self.score = tf.keras.layers.Dense(1)

    def call(self, items: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
        # items: [batch, set_size, dim]; valid: [batch, set_size] bool (a user may have no items)
        scores = tf.squeeze(self.score(self.proj(items)), axis=-1)
        scores = tf.where(valid, scores, tf.fill(tf.shape(scores), -np.inf))
        weights = tf.nn.softmax(scores, axis=-1)  # numcheck-bug: softmax
        return tf.reduce_sum(weights[..., None] * items, axis=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "hidden": self.hidden}
