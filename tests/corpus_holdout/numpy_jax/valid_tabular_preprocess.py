# covers: unguarded-domain, log1p
"""Robust tabular preprocessing: guarded z-scores, log1p on clipped counts, robust and min-max scaling."""
import numpy as np


class StandardScaler:
    def __init__(self):
        self.mean_ = None
        self.scale_ = None

    def fit(self, X: np.ndarray) -> "StandardScaler":
        self.mean_ = X.mean(axis=0)
        self.scale_ = X.std(axis=0) + 1e-8
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean_) / self.scale_


def log_counts(counts: np.ndarray) -> np.ndarray:
    counts = np.clip(counts, 0, None)
    return np.log1p(counts)


def robust_scale(X: np.ndarray) -> np.ndarray:
    q1, median, q3 = np.percentile(X, [25, 50, 75], axis=0)
    iqr = np.clip(q3 - q1, 1e-6, None)
    return (X - median) / iqr


def safe_log_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.clip(num, 1e-12, None)
    den = np.clip(den, 1e-12, None)
    return np.log(num) - np.log(den)


def minmax(X: np.ndarray) -> np.ndarray:
    lo = X.min(axis=0)
    span = np.clip(X.max(axis=0) - lo, 1e-12, None)
    return (X - lo) / span


def pipeline(X: np.ndarray, count_cols, ratio_pairs) -> np.ndarray:
    X = X.copy()
    X[:, count_cols] = log_counts(X[:, count_cols])
    extra = [safe_log_ratio(X[:, i], X[:, j]) for i, j in ratio_pairs]
    X = np.column_stack([X] + extra) if extra else X
    return StandardScaler().fit(X).transform(robust_scale(X))
