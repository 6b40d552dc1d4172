import numpy as np


def precision_recall(pred: np.ndarray, target: np.ndarray):
    """Binary precision and recall; a model that predicts no positives has tp + fp = 0."""
    tp = np.sum((pred == 1) & (target == 1))
    fp = np.sum((pred == 1) & (target == 0))
    fn = np.sum((pred == 0) & (target == 1))
    precision = np.divide(tp, tp + fp)  # expect: div/unguarded-domain
    recall = tp / (tp + fn)  # expect: div/unguarded-domain
    return precision, recall
