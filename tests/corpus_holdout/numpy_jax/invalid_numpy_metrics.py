"""Evaluation utilities for a classifier and a language model (NumPy, run after inference)."""
import numpy as np


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> np.ndarray:
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(cm, (y_true, y_pred), 1)
    return cm


def per_class_f1(cm: np.ndarray) -> np.ndarray:
    tp = np.diag(cm).astype(np.float64)
    fp = cm.sum(axis=0) - tp
    fn = cm.sum(axis=1) - tp
    precision = tp / (tp + fp)  # expect: div/unguarded-domain
    recall = np.divide(tp, tp + fn)  # expect: div/unguarded-domain
    denom = np.clip(precision + recall, 1e-12, None)
    return 2 * precision * recall / denom


def macro_f1(y_true, y_pred, num_classes):
    f1 = per_class_f1(confusion_matrix(y_true, y_pred, num_classes))
    return float(f1.mean())


def perplexity(token_nll: np.ndarray, lengths: np.ndarray) -> float:
    total_tokens = np.clip(lengths.sum(), 1, None)
    mean_nll = token_nll.sum() / total_tokens
    return float(np.exp(mean_nll))  # expect: exp/unguarded-domain


def evaluate(y_true, y_pred, token_nll, lengths, num_classes=10):
    return {
        "macro_f1": macro_f1(y_true, y_pred, num_classes),
        "accuracy": float((y_true == y_pred).mean()),
        "ppl": perplexity(token_nll, lengths),
    }
