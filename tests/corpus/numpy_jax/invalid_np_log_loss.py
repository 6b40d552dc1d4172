import numpy as np


def log_loss(y_true: np.ndarray, y_prob: np.ndarray) -> float:
    """Binary log loss for evaluating a calibrated classifier."""
    ll = y_true * np.log(y_prob)  # expect: log/unguarded-domain
    ll += (1 - y_true) * np.log(1 - y_prob)  # expect: log/unguarded-domain
    return float(-ll.mean())
