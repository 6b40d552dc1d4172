"""CSV feature report: pure-Python parsing and statistics, then a NumPy z-score and log scale."""
import csv
import math
import statistics

import numpy as np


def read_column(path: str, column: str):
    with open(path, newline="") as fh:
        return [float(row[column]) for row in csv.DictReader(fh) if row[column]]


def python_summary(values):
    n = len(values)
    mean = sum(values) / n
    sd = statistics.pstdev(values)
    geo = math.exp(sum(math.log(v) for v in values if v > 0) / max(1, n))
    return {"n": n, "mean": mean, "sd": sd, "geo_mean": geo, "cv": sd / mean if mean else None}


def zscore(values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    return (arr - arr.mean()) / arr.std()  # expect: div/unguarded-domain


def log_scale(values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    return np.log(arr)  # expect: log/unguarded-domain


def report(path: str, column: str) -> dict:
    values = read_column(path, column)
    summary = python_summary(values)
    summary["z_max"] = float(np.max(np.abs(zscore(values))))
    summary["log_mean"] = float(np.mean(log_scale(values)))
    return summary
