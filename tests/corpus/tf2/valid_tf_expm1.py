# covers: expm1
import tensorflow as tf


class PriceRegressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.body = tf.keras.layers.Dense(128, activation="relu")
        self.head = tf.keras.layers.Dense(1)

    def call(self, inputs):
        log_price = self.head(self.body(inputs))
        return tf.math.expm1(tf.clip_by_value(log_price, -10.0, 10.0))
