# covers: unguarded-domain, log-sum-exp
"""NumPy evaluation metrics with guarded denominators: F1, calibration error, perplexity."""
import numpy as np
from scipy.special import logsumexp


def f1_scores(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    precision = tp / np.clip(tp + fp, 1e-12, None)
    recall = tp / np.clip(tp + fn, 1e-12, None)
    return 2 * precision * recall / np.clip(precision + recall, 1e-12, None)


def expected_calibration_error(confidences: np.ndarray, correct: np.ndarray, n_bins: int = 15) -> float:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ece = 0.0
    n = len(confidences)
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (confidences > lo) & (confidences <= hi)
        count = in_bin.sum()
        if count == 0:
            continue
        gap = abs(correct[in_bin].mean() - confidences[in_bin].mean())
        ece += gap * count / n
    return ece


def mean_log_likelihood(logits: np.ndarray, labels: np.ndarray) -> float:
    log_probs = logits - logsumexp(logits, axis=-1, keepdims=True)
    return float(log_probs[np.arange(len(labels)), labels].mean())


def perplexity(token_nll: np.ndarray, mask: np.ndarray) -> float:
    n_tokens = np.clip(mask.sum(), 1.0, None)
    mean_nll = (token_nll * mask).sum() / n_tokens
    return float(np.exp(np.clip(mean_nll, 0.0, 50.0)))
