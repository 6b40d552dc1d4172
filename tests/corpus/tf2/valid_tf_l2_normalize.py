# covers: manual-normalize
import tensorflow as tf


class CosineHead(tf.keras.layers.Layer):
    def __init__(self, num_classes: int, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.num_classes), initializer="glorot_uniform")

    def call(self, inputs):
        x = tf.math.l2_normalize(inputs, axis=-1)
        w = tf.math.l2_normalize(self.w, axis=0)
        return tf.matmul(x, w)
