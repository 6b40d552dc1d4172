# covers: unguarded-domain, log-softmax
"""Multi-class focal loss with an integer exponent, Dice and box IoU with guarded denominators."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FocalLoss(nn.Module):
    def __init__(self, weight=None, ignore_index: int = -100):
        super().__init__()
        self.weight = weight
        self.ignore_index = ignore_index

    def forward(self, logits, target):
        log_prob = F.log_softmax(logits, dim=1)
        prob = F.softmax(logits, dim=1)
        focal = (1 - prob) ** 2 * log_prob
        return F.nll_loss(focal, target, weight=self.weight, ignore_index=self.ignore_index)


def dice_coefficient(probs: torch.Tensor, target: torch.Tensor, dims=(2, 3)) -> torch.Tensor:
    inter = (probs * target).sum(dims)
    card = probs.sum(dims) + target.sum(dims)
    return 2.0 * inter / card.clamp(min=1e-6)


def box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area1[:, None] + area2 - inter
    return inter / union.clamp(min=1e-7)


def match_anchors(anchors: torch.Tensor, gt_boxes: torch.Tensor, iou_threshold: float = 0.5):
    if gt_boxes.numel() == 0:
        return torch.full((anchors.size(0),), -1, dtype=torch.long)
    iou = box_iou(anchors, gt_boxes)
    best_iou, best_gt = iou.max(dim=1)
    best_gt[best_iou < iou_threshold] = -1
    return best_gt
