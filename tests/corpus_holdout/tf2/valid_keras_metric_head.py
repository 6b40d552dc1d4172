# covers: manual-normalize, bce-sigmoid, unguarded-domain
"""Keras layers: an ArcFace-style margin head and a siamese verifier trained on logits."""
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import backend as K


class ArcMarginHead(keras.layers.Layer):
    def __init__(self, num_classes, margin=0.5, scale=64.0, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.margin = margin
        self.scale = scale

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(int(input_shape[0][-1]), self.num_classes))

    def call(self, inputs):
        features, labels = inputs
        x = tf.math.l2_normalize(features, axis=1)
        w = tf.math.l2_normalize(self.w, axis=0)
        cos_t = tf.clip_by_value(tf.matmul(x, w), -1.0 + 1e-6, 1.0 - 1e-6)
        theta = tf.acos(cos_t)
        target = tf.cos(theta + self.margin)
        one_hot = tf.one_hot(labels, depth=self.num_classes)
        return self.scale * (one_hot * target + (1.0 - one_hot) * cos_t)


class SiameseDistance(keras.layers.Layer):
    def call(self, inputs):
        a, b = inputs
        sq = K.sum(K.square(a - b), axis=-1, keepdims=True)
        return tf.sqrt(tf.maximum(sq, 1e-7))


def verification_loss(y_true, pair_logits):
    return tf.reduce_mean(keras.losses.binary_crossentropy(y_true, pair_logits, from_logits=True))


def contrastive_loss(y_true, distance, margin=1.0):
    y_true = tf.cast(y_true, distance.dtype)
    positive = y_true * tf.square(distance)
    negative = (1.0 - y_true) * tf.square(tf.maximum(margin - distance, 0.0))
    return tf.reduce_mean(positive + negative)
