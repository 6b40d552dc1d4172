# covers: unguarded-domain
import numpy as np


def log_loss(y_true: np.ndarray, y_prob: np.ndarray) -> float:
    y_prob = np.clip(y_prob, 1e-7, 1 - 1e-7)
    ll = y_true * np.log(y_prob)
    ll += (1 - y_true) * np.log(1 - y_prob)
    return float(-ll.mean())
