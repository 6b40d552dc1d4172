import numpy as np


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """KL divergence between empirical and model label distributions."""
    np.clip(q, 1e-12, None)  # expect: clamp/discarded-guard
    return float(np.sum(p * np.log(p / q)))  # expect: log/unguarded-domain, div/unguarded-domain
