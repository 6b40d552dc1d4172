"""TF2 Keras rate model: a discarded clip_by_value and a single-where "safe" log."""
import tensorflow as tf
from tensorflow import keras


class RateModel(keras.Model):
    def __init__(self, hidden=64):
        super().__init__()
        self.body = keras.layers.Dense(hidden, activation="relu")
        self.out = keras.layers.Dense(1, activation="softplus")

    def call(self, inputs):
        return tf.squeeze(self.out(self.body(inputs)), -1)


def poisson_deviance(y_true, rate):
    tf.clip_by_value(rate, 1e-6, 1e6)  # expect: clamp/discarded-guard
    log_rate = tf.math.log(rate)  # expect: log/unguarded-domain
    return 2.0 * tf.reduce_mean(tf.math.xlogy(y_true, y_true) - y_true * log_rate - (y_true - rate))


def safe_log(x):
    return tf.where(x > 0.0, tf.math.log(x), tf.zeros_like(x))  # expect: log/where-grad-leak


@tf.function
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        rate = model(x, training=True)
        loss = poisson_deviance(y, rate) + 1e-3 * tf.reduce_mean(safe_log(rate))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
