"""Feature propagation by inverse-distance-weighted interpolation (PointNet++ style)."""

import torch


def three_interpolate(
    unknown: torch.Tensor, known: torch.Tensor, known_feats: torch.Tensor, k: int = 3
) -> torch.Tensor:
    """unknown: [batch, n, 3]; known: [batch, m, 3]; known_feats: [batch, m, channels].

    Each unknown point gets the features of its k nearest known points, weighted by the
    inverse squared distance.
    """
    sq_dist = ((unknown[:, :, None, :] - known[:, None, :, :]) ** 2).sum(dim=-1)
    sq_dist_k, idx = sq_dist.topk(k, dim=-1, largest=False)
    # an unknown point that coincides with a known one is at distance 0
    weight = (sq_dist_k + 1e-8).pow(-1.0)
    weight = weight / weight.sum(dim=-1, keepdim=True)
    neighbours = torch.stack([feats[i] for feats, i in zip(known_feats, idx, strict=True)])
    return (weight[..., None] * neighbours).sum(dim=2)
