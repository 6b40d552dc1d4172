# covers: unguarded-domain, discarded-guard
"""Detector losses in Keras: a clipped binary focal loss and GIoU with guarded unions."""
import tensorflow as tf
from tensorflow.keras import backend as K


class BinaryFocalLoss(tf.keras.losses.Loss):
    def __init__(self, gamma=2.0, alpha=0.25, name="binary_focal"):
        super().__init__(name=name)
        self.gamma = gamma
        self.alpha = alpha

    def call(self, y_true, y_pred):
        y_pred = tf.clip_by_value(y_pred, 1e-6, 1.0 - 1e-6)
        pos = -y_true * self.alpha * tf.pow(1.0 - y_pred, self.gamma) * tf.math.log(y_pred)
        neg = -(1.0 - y_true) * (1.0 - self.alpha) * tf.pow(y_pred, self.gamma) * tf.math.log(1.0 - y_pred)
        return K.mean(pos + neg, axis=-1)


def giou_loss(boxes_true, boxes_pred):
    area_t = tf.reduce_prod(boxes_true[..., 2:] - boxes_true[..., :2], axis=-1)
    area_p = tf.reduce_prod(boxes_pred[..., 2:] - boxes_pred[..., :2], axis=-1)
    lt = tf.maximum(boxes_true[..., :2], boxes_pred[..., :2])
    rb = tf.minimum(boxes_true[..., 2:], boxes_pred[..., 2:])
    inter = tf.reduce_prod(tf.maximum(rb - lt, 0.0), axis=-1)
    union = tf.maximum(area_t + area_p - inter, 1e-7)
    iou = inter / union
    enc_lt = tf.minimum(boxes_true[..., :2], boxes_pred[..., :2])
    enc_rb = tf.maximum(boxes_true[..., 2:], boxes_pred[..., 2:])
    enclosure = tf.maximum(tf.reduce_prod(enc_rb - enc_lt, axis=-1), 1e-7)
    giou = iou - (enclosure - union) / enclosure
    return tf.reduce_mean(1.0 - giou)


def detection_loss(cls_true, cls_pred, box_true, box_pred, box_weight=2.0):
    focal = BinaryFocalLoss()(cls_true, cls_pred)
    return focal + box_weight * giou_loss(box_true, box_pred)
