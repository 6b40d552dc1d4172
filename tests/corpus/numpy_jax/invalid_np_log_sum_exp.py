import math

import numpy as np


def log_marginal_likelihood(log_weights: np.ndarray, num_samples: int) -> np.ndarray:
    """Importance-sampled log evidence (IWAE bound) computed naively."""
    return np.log(np.sum(np.exp(log_weights), axis=-1)) - math.log(num_samples)  # expect: log/log-sum-exp
