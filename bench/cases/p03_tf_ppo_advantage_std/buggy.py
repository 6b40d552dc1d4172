"""PPO clipped policy loss with per-batch advantage normalisation, TF2."""

import tensorflow as tf


def normalize_advantages(returns: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
    advantages = returns - values
    mean = tf.reduce_mean(advantages)
    std = tf.math.reduce_std(advantages)
    return (advantages - mean) / std  # numcheck-bug: div


def ppo_policy_loss(
    new_log_probs: tf.Tensor,
    old_log_probs: tf.Tensor,
    returns: tf.Tensor,
    values: tf.Tensor,
    clip_ratio: float = 0.2,
) -> tf.Tensor:
    """All arguments: [batch]. A sparse-reward batch often has identical returns."""
    advantages = tf.stop_gradient(normalize_advantages(returns, values))
    ratio = tf.exp(new_log_probs - old_log_probs)
    clipped = tf.clip_by_value(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio)
    surrogate = tf.minimum(ratio * advantages, clipped * advantages)
    return -tf.reduce_mean(surrogate)
