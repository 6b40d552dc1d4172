"""Keras metric-learning model: an L2-normalisation layer, cosine logits and a pair verifier."""
import tensorflow as tf
from tensorflow import keras


class L2Normalize(keras.layers.Layer):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        return inputs / tf.norm(inputs, axis=self.axis, keepdims=True)  # expect: div/manual-normalize


class CosineLogits(keras.layers.Layer):
    def __init__(self, num_classes, scale=30.0, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.scale = scale

    def build(self, input_shape):
        self.kernel = self.add_weight(
            name="kernel", shape=(int(input_shape[-1]), self.num_classes), initializer="glorot_uniform"
        )

    def call(self, inputs):
        w = tf.math.l2_normalize(self.kernel, axis=0)
        x = tf.math.l2_normalize(inputs, axis=-1)
        return self.scale * tf.matmul(x, w)


def verification_loss(y_true, pair_logits):
    prob_same = tf.sigmoid(pair_logits)
    return tf.reduce_mean(keras.losses.binary_crossentropy(y_true, prob_same))  # expect: binary_cross_entropy/bce-sigmoid


def build_model(input_dim, embed_dim=128, num_classes=1000):
    inputs = keras.Input(shape=(input_dim,))
    h = keras.layers.Dense(512, activation="relu")(inputs)
    emb = L2Normalize(name="embedding")(keras.layers.Dense(embed_dim)(h))
    logits = CosineLogits(num_classes)(emb)
    return keras.Model(inputs, logits)


if __name__ == "__main__":
    model = build_model(256)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.summary()
