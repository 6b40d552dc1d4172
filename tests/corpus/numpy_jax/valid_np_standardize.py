# covers: unguarded-domain
import numpy as np


def standardize(features: np.ndarray) -> np.ndarray:
    """Column-wise z-scores for a tabular dataset."""
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    return (features - mean) / (std + 1e-8)


def rms(x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean(x ** 2, axis=-1) + 1e-12)
