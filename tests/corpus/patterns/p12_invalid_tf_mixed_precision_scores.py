import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


class ScaledDotAttention(tf.keras.layers.Layer):
    def call(self, q, k, v):
        scores = tf.matmul(q, k, transpose_b=True) / tf.math.sqrt(32.0)
        weights = tf.nn.softmax(scores, axis=-1)  # expect: softmax/fp16-scores-overflow
        return tf.matmul(weights, v)
