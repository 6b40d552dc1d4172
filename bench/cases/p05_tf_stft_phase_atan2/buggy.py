"""Phase-aware speech enhancement loss: anti-wrapping phase error on STFT bins, TF2."""

import tensorflow as tf


def phase_loss(pred_real: tf.Tensor, pred_imag: tf.Tensor, target_phase: tf.Tensor) -> tf.Tensor:
    """pred_real, pred_imag: [batch, frames, bins] enhanced spectrum;
    target_phase: [batch, frames, bins] clean phase in radians."""
    phase = tf.math.atan2(pred_imag, pred_real)  # numcheck-bug: atan2
    diff = phase - target_phase
    return tf.reduce_mean(1.0 - tf.cos(diff))


def magnitude_loss(
    pred_real: tf.Tensor, pred_imag: tf.Tensor, target_power: tf.Tensor
) -> tf.Tensor:
    power = tf.square(pred_real) + tf.square(pred_imag)
    return tf.reduce_mean(tf.abs(power - target_power))
