"""Keras input block for gene-expression counts: log transform with zeros kept at zero."""

import tensorflow as tf


class LogCountEncoder(tf.keras.layers.Layer):
    def __init__(self, units: int = 8, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.dense = tf.keras.layers.Dense(units, activation="relu")

    def call(self, counts: tf.Tensor) -> tf.Tensor:
        # counts: [cells, genes] normalised expression counts, 0 for unexpressed genes
        expressed = counts > 0
        log_counts = tf.where(expressed, tf.math.log(counts), 0.0)  # numcheck-bug: log
        return self.dense(log_counts)

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units}
