# covers: log-sum-exp
import math

import numpy as np
from scipy.special import logsumexp


def log_marginal_likelihood(log_weights: np.ndarray, num_samples: int) -> np.ndarray:
    return logsumexp(log_weights, axis=-1) - math.log(num_samples)


def log_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logaddexp(a, b)
