# covers: unguarded-domain
import numpy as np


def rmse_per_row(errors: np.ndarray) -> np.ndarray:
    mse = np.mean(errors ** 2, axis=-1)
    mse = np.clip(mse, 1e-12, None)
    return np.sqrt(mse)
