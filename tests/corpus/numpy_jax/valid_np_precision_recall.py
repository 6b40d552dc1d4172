# covers: unguarded-domain
import numpy as np


def precision_recall(pred: np.ndarray, target: np.ndarray):
    tp = np.sum((pred == 1) & (target == 1))
    fp = np.sum((pred == 1) & (target == 0))
    fn = np.sum((pred == 0) & (target == 1))
    precision = np.divide(tp, np.maximum(tp + fp, 1))
    recall = tp / np.maximum(tp + fn, 1)
    return precision, recall
