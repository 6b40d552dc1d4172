# covers: unguarded-domain
import tensorflow as tf


class SimpleLayerNorm(tf.keras.layers.Layer):
    def call(self, x):
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        variance = tf.math.reduce_variance(x, axis=-1, keepdims=True)
        return (x - mean) * tf.math.rsqrt(variance + 1e-6)
