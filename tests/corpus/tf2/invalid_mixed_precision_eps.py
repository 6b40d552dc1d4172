import tensorflow as tf
from tensorflow.keras import mixed_precision

mixed_precision.set_global_policy("mixed_float16")


class RelativeErrorLoss(tf.keras.losses.Loss):
    def call(self, y_true, y_pred):
        return tf.abs(y_pred - y_true) / (tf.abs(y_true) + 1e-8)  # expect: div/eps-underflow-fp16
