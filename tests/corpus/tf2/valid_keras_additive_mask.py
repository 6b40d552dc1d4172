# covers: masked-softmax-inf
import tensorflow as tf


class MaskedSelfAttention(tf.keras.layers.Layer):
    def __init__(self, head_dim: int, **kwargs):
        super().__init__(**kwargs)
        self.scale = head_dim ** -0.5

    def call(self, q, k, v, mask):
        scores = tf.matmul(q, k, transpose_b=True) * self.scale
        scores += (1.0 - tf.cast(mask, scores.dtype)) * -1e9
        weights = tf.nn.softmax(scores, axis=-1)
        return tf.matmul(weights, v)
