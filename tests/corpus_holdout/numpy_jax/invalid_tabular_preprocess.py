"""Tabular preprocessing for a housing regression dataset: scaling, log transforms, target encoding."""
from typing import Dict, List

import numpy as np
import pandas as pd

NUMERIC = ["income", "age", "rooms", "population"]
SKEWED = ["income", "population"]


def standardize(X: np.ndarray) -> np.ndarray:
    mu = X.mean(axis=0)
    sigma = X.std(axis=0)
    return (X - mu) / sigma  # expect: div/unguarded-domain


def log_transform(df: pd.DataFrame, columns: List[str]) -> pd.DataFrame:
    out = df.copy()
    for col in columns:
        out[col] = np.log(out[col].to_numpy())  # expect: log/unguarded-domain
    return out


def minmax(X: np.ndarray, feature_range=(0.0, 1.0)) -> np.ndarray:
    lo, hi = feature_range
    span = X.max(axis=0) - X.min(axis=0)
    scaled = (X - X.min(axis=0)) / span  # expect: div/unguarded-domain
    return scaled * (hi - lo) + lo


def target_encode(categories: np.ndarray, y: np.ndarray, smoothing: float = 10.0) -> Dict[int, float]:
    prior = y.mean()
    table = {}
    for cat in np.unique(categories):
        sel = y[categories == cat]
        n = len(sel)
        table[int(cat)] = (sel.sum() + smoothing * prior) / (n + smoothing)
    return table


def preprocess(df: pd.DataFrame) -> np.ndarray:
    df = log_transform(df, SKEWED)
    X = df[NUMERIC].to_numpy(dtype=np.float64)
    return np.concatenate([standardize(X), minmax(X)], axis=1)
