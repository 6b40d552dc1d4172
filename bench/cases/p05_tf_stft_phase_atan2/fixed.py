"""Phase-aware speech enhancement loss: anti-wrapping phase error on STFT bins, TF2."""

import tensorflow as tf


def phase_loss(pred_real: tf.Tensor, pred_imag: tf.Tensor, target_phase: tf.Tensor) -> tf.Tensor:
    """pred_real, pred_imag: [batch, frames, bins] enhanced spectrum;
    target_phase: [batch, frames, bins] clean phase in radians."""
    # the phase of a zero bin is undefined and atan2 has a NaN gradient there: evaluate it at
    # a safe point and drop those bins (double where)
    voiced = tf.abs(pred_real) + tf.abs(pred_imag) > 1e-6
    safe_real = tf.where(voiced, pred_real, tf.ones_like(pred_real))
    safe_imag = tf.where(voiced, pred_imag, tf.zeros_like(pred_imag))
    phase = tf.math.atan2(safe_imag, safe_real)
    diff = tf.where(voiced, phase - target_phase, tf.zeros_like(phase))
    return tf.reduce_mean(1.0 - tf.cos(diff))


def magnitude_loss(
    pred_real: tf.Tensor, pred_imag: tf.Tensor, target_power: tf.Tensor
) -> tf.Tensor:
    power = tf.square(pred_real) + tf.square(pred_imag)
    return tf.reduce_mean(tf.abs(power - target_power))
