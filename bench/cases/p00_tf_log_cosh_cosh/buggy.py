"""Robust regression loss for a TF2 forecasting model: log-cosh with a quantile term."""

import tensorflow as tf


def log_cosh(y_true: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
    error = y_pred - y_true
    return tf.reduce_mean(tf.math.log(tf.math.cosh(error)), axis=-1)  # numcheck-bug: cosh


def pinball(y_true: tf.Tensor, y_pred: tf.Tensor, q: float) -> tf.Tensor:
    error = y_true - y_pred
    return tf.reduce_mean(tf.maximum(q * error, (q - 1.0) * error), axis=-1)


def forecasting_loss(
    y_true: tf.Tensor, y_pred: tf.Tensor, quantile_weight: float = 0.1
) -> tf.Tensor:
    """y_true, y_pred: [batch, horizon] in the series' units."""
    per_series = log_cosh(y_true, y_pred) + quantile_weight * pinball(y_true, y_pred, 0.9)
    return tf.reduce_mean(per_series)
