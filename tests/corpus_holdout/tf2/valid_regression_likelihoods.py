# covers: unguarded-domain, log1p
"""Heteroscedastic regression and Poisson count heads in Keras, with guarded likelihoods."""
import math

import tensorflow as tf
from tensorflow import keras


class MeanScaleHead(keras.layers.Layer):
    def __init__(self, units=1, **kwargs):
        super().__init__(**kwargs)
        self.mean = keras.layers.Dense(units)
        self.raw_scale = keras.layers.Dense(units)

    def call(self, inputs):
        scale = tf.nn.softplus(self.raw_scale(inputs)) + 1e-3
        return self.mean(inputs), scale


def gaussian_nll(y, mean, scale):
    scale = tf.maximum(scale, 1e-3)
    z = (y - mean) / scale
    return tf.reduce_mean(0.5 * tf.square(z) + tf.math.log(scale) + 0.5 * math.log(2.0 * math.pi))


def poisson_nll(counts, log_rate):
    counts = tf.maximum(counts, 0.0)
    log_rate = tf.clip_by_value(log_rate, -15.0, 15.0)
    rate = tf.exp(log_rate)
    nll = rate - counts * log_rate + tf.math.lgamma(counts + 1.0)
    return tf.reduce_mean(tf.reduce_sum(nll, axis=-1))


def log_count_features(counts):
    counts = tf.maximum(counts, 0.0)
    return tf.math.log1p(counts)


def build_regressor(input_dim):
    inputs = keras.Input(shape=(input_dim,))
    h = keras.layers.Dense(64, activation="relu")(inputs)
    mean, scale = MeanScaleHead()(h)
    return keras.Model(inputs, [mean, scale])
