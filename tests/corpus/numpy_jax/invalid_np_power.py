import numpy as np


def gamma_correct(img: np.ndarray, gamma: float = 2.2) -> np.ndarray:
    """Gamma correction of a denoised image; denoisers overshoot below 0."""
    return np.power(img, 1.0 / gamma)  # expect: pow/unguarded-domain
