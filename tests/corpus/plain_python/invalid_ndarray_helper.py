import numpy as np


def safe_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Looks like a plain helper, but b is an array that can hold zeros."""
    return a / b  # expect: div/unguarded-domain
