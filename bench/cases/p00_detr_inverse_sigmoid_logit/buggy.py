"""Iterative bounding-box refinement (Deformable DETR decoder layer, box branch only)."""

import torch
from torch import nn


class BoxRefinement(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.bbox_embed = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 4))

    def forward(self, queries: torch.Tensor, reference_boxes: torch.Tensor) -> torch.Tensor:
        # queries: [batch, num_queries, dim]; reference_boxes: [batch, num_queries, 4] as
        # normalised (cx, cy, w, h) in [0, 1], clipped to the image by the previous layer
        delta = self.bbox_embed(queries)
        ref_logits = torch.logit(reference_boxes)  # numcheck-bug: logit
        new_boxes = torch.sigmoid(delta + ref_logits)
        return new_boxes
