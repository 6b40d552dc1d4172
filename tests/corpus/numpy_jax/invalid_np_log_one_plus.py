import numpy as np


def log_transform(counts: np.ndarray) -> np.ndarray:
    """Variance-stabilising transform of read counts before PCA."""
    return np.log(1 + counts)  # expect: log/log1p
