# covers: unguarded-domain
import numpy as np


def gamma_correct(img: np.ndarray, gamma: float = 2.2) -> np.ndarray:
    return np.power(np.clip(img, 1e-6, 1.0), 1.0 / gamma)
