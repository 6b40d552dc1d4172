# covers: log1p
import numpy as np


def log_transform(counts: np.ndarray) -> np.ndarray:
    return np.log1p(np.clip(counts, 0, None))
