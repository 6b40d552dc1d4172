import tensorflow as tf


class ArcMarginProduct(tf.keras.layers.Layer):
    def __init__(self, num_classes: int, margin: float = 0.5, scale: float = 64.0, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.margin = margin
        self.scale = scale

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.num_classes), initializer="glorot_uniform")

    def call(self, inputs, labels):
        cos_t = tf.matmul(tf.math.l2_normalize(inputs, axis=1), tf.math.l2_normalize(self.w, axis=0))
        theta = tf.acos(tf.clip_by_value(cos_t, -1.0, 1.0))  # expect: acos/unguarded-domain
        target = tf.cos(theta + self.margin)
        onehot = tf.one_hot(labels, depth=self.num_classes)
        return self.scale * (onehot * target + (1.0 - onehot) * cos_t)
