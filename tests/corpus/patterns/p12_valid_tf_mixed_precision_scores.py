# covers: fp16-scores-overflow
import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


class ScaledDotAttention(tf.keras.layers.Layer):
    def call(self, q, k, v):
        scores = tf.matmul(q, k, transpose_b=True) / tf.math.sqrt(32.0)
        weights = tf.nn.softmax(tf.cast(scores, tf.float32), axis=-1)
        return tf.matmul(tf.cast(weights, v.dtype), v)
