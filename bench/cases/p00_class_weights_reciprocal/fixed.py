"""Class-balanced cross-entropy with inverse-frequency weights computed per batch."""

import torch
import torch.nn.functional as F


def class_balanced_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """logits: [batch, classes]; targets: [batch] class indices.

    Each class is weighted by the inverse of its frequency in the batch, and the weights are
    normalised to average 1.
    """
    num_classes = logits.shape[1]
    counts = torch.bincount(targets, minlength=num_classes).to(logits.dtype)
    # a class absent from the batch has count 0: its weight is never used, keep it finite
    weights = torch.reciprocal(counts.clamp_min(1.0))
    weights = weights / weights.sum() * num_classes
    return F.cross_entropy(logits, targets, weight=weights)
