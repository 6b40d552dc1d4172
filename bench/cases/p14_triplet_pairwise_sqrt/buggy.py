"""Batch-hard triplet loss for person re-identification (Hermans et al., 2017)."""

import torch
import torch.nn.functional as F


def pairwise_distances(embeddings: torch.Tensor) -> torch.Tensor:
    diff = embeddings[:, None, :] - embeddings[None, :, :]
    dist = torch.sqrt((diff**2).sum(dim=-1))  # numcheck-bug: sqrt
    return dist


def batch_hard_triplet_loss(
    embeddings: torch.Tensor, labels: torch.Tensor, margin: float = 0.3
) -> torch.Tensor:
    """embeddings: [batch, dim]; labels: [batch] identity ids."""
    dist = pairwise_distances(embeddings)
    same = labels[:, None] == labels[None, :]
    hardest_positive = (dist * same.float()).max(dim=1).values
    far = dist.max().detach() + 1.0
    hardest_negative = torch.where(same, far, dist).min(dim=1).values
    return F.relu(hardest_positive - hardest_negative + margin).mean()
