# covers: where-grad-leak
"""Double-where patterns from real code: safe division, safe sqrt and safe log in torch and TF."""
import tensorflow as tf
import torch


def safe_divide(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    safe_den = torch.where(den != 0, den, 1.0)
    return torch.where(den != 0, num / safe_den, 0.0)


def safe_sqrt(x: torch.Tensor) -> torch.Tensor:
    safe_x = torch.where(x > 0, x, torch.ones_like(x))
    return torch.where(x > 0, torch.sqrt(safe_x), torch.zeros_like(x))


def safe_log_torch(x: torch.Tensor) -> torch.Tensor:
    safe_x = torch.where(x > 0, x, torch.ones_like(x))
    return torch.where(x > 0, torch.log(safe_x), torch.zeros_like(x))


def tf_safe_log(x):
    safe_x = tf.where(x > 0.0, x, tf.ones_like(x))
    return tf.where(x > 0.0, tf.math.log(safe_x), tf.zeros_like(x))


def entropy(p: torch.Tensor) -> torch.Tensor:
    return -torch.special.xlogy(p, p).sum(-1)


def radial_features(points: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r2 = (points ** 2).sum(-1)
    r = safe_sqrt(r2)
    return torch.stack([r, safe_log_torch(r2), safe_divide(weights, r)], dim=-1)
