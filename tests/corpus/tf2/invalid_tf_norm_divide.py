import tensorflow as tf


class CosineHead(tf.keras.layers.Layer):
    """Cosine classifier: normalised features against normalised class weights."""

    def __init__(self, num_classes: int, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.num_classes), initializer="glorot_uniform")

    def call(self, inputs):
        x = inputs / tf.norm(inputs, axis=-1, keepdims=True)  # expect: div/manual-normalize
        w = self.w / tf.norm(self.w, axis=0, keepdims=True)  # expect: div/manual-normalize
        return tf.matmul(x, w)
