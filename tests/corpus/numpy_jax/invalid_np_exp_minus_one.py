import numpy as np


def decode_predictions(log_prices: np.ndarray) -> np.ndarray:
    """Undo the log1p target transform of a gradient-boosted price model."""
    return np.exp(log_prices) - 1  # expect: exp/expm1
