"""Dataset audit script: plain-Python bookkeeping plus one histogram entropy computed in torch."""
import logging
import math

import torch

logger = logging.getLogger("audit")


def label_distribution(labels):
    counts = {}
    for y in labels:
        counts[y] = counts.get(y, 0) + 1
    n = len(labels)
    return {k: v / n for k, v in counts.items()}


def imbalance_ratio(dist):
    return max(dist.values()) / min(dist.values())


def feature_entropy(values: torch.Tensor, bins: int = 64) -> torch.Tensor:
    hist = torch.histc(values, bins=bins)
    p = hist / hist.sum()  # expect: div/unguarded-domain
    return -(p * p.log2()).sum()  # expect: log2/unguarded-domain


def audit(dataset):
    labels = [int(y) for _, y in dataset]
    dist = label_distribution(labels)
    logger.log(logging.INFO, "classes=%d imbalance=%.2f", len(dist), imbalance_ratio(dist))
    logger.log(logging.INFO, "label entropy (nats) = %.3f", -sum(p * math.log(p) for p in dist.values()))
    feats = torch.stack([x for x, _ in dataset])
    for j in range(feats.shape[1]):
        h = feature_entropy(feats[:, j])
        logger.log(logging.DEBUG, "feature %d entropy %.3f bits", j, float(h))
