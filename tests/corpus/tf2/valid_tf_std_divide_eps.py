# covers: unguarded-domain
import tensorflow as tf


class InstanceStandardize(tf.keras.layers.Layer):
    def call(self, x):
        mean = tf.reduce_mean(x, axis=[1, 2], keepdims=True)
        std = tf.math.reduce_std(x, axis=[1, 2], keepdims=True)
        return (x - mean) / tf.maximum(std, 1e-5)
