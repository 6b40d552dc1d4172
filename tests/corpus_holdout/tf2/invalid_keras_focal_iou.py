"""Keras loss and metric objects for a detector: categorical focal loss and a running box IoU."""
import tensorflow as tf
from tensorflow.keras import backend as K


class CategoricalFocalLoss(tf.keras.losses.Loss):
    def __init__(self, gamma=2.0, alpha=0.25, name="focal"):
        super().__init__(name=name)
        self.gamma = gamma
        self.alpha = alpha

    def call(self, y_true, y_pred):
        ce = -y_true * K.log(y_pred)  # expect: log/unguarded-domain
        weight = self.alpha * tf.pow(1.0 - y_pred, self.gamma)  # expect: pow/unguarded-domain
        return K.sum(weight * ce, axis=-1)


class MeanBoxIoU(tf.keras.metrics.Metric):
    def __init__(self, name="mean_iou", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_weight(name="total", initializer="zeros")
        self.count = self.add_weight(name="count", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        area_t = tf.reduce_prod(y_true[..., 2:] - y_true[..., :2], axis=-1)
        area_p = tf.reduce_prod(y_pred[..., 2:] - y_pred[..., :2], axis=-1)
        lt = tf.maximum(y_true[..., :2], y_pred[..., :2])
        rb = tf.minimum(y_true[..., 2:], y_pred[..., 2:])
        wh = tf.maximum(rb - lt, 0.0)
        inter = wh[..., 0] * wh[..., 1]
        union = area_t + area_p - inter
        iou = inter / union  # expect: div/unguarded-domain
        self.total.assign_add(tf.reduce_sum(iou))
        self.count.assign_add(tf.cast(tf.size(iou), tf.float32))

    def result(self):
        return tf.math.divide_no_nan(self.total, self.count)

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)
