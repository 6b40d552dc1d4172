import tensorflow as tf


class PriceRegressor(tf.keras.Model):
    """Trained on log1p(price); predictions are mapped back with exp(x) - 1."""

    def __init__(self):
        super().__init__()
        self.body = tf.keras.layers.Dense(128, activation="relu")
        self.head = tf.keras.layers.Dense(1)

    def call(self, inputs):
        log_price = self.head(self.body(inputs))
        return tf.exp(log_price) - 1.0  # expect: exp/expm1
