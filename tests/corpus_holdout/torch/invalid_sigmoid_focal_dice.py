"""Segmentation losses: sigmoid focal loss (RetinaNet form) plus a soft Dice term."""
import torch
import torch.nn.functional as F
from torch import Tensor


def sigmoid_focal_loss(inputs: Tensor, targets: Tensor, alpha: float = 0.25, gamma: float = 2.0) -> Tensor:
    p = torch.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)  # expect: pow/unguarded-domain
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    return loss.mean()


def soft_dice_loss(logits: Tensor, targets: Tensor) -> Tensor:
    probs = torch.sigmoid(logits).flatten(1)
    targets = targets.flatten(1)
    inter = (probs * targets).sum(-1)
    union = probs.sum(-1) + targets.sum(-1)
    dice = 2.0 * inter / union  # expect: div/unguarded-domain
    return 1.0 - dice.mean()


def combined_loss(logits: Tensor, masks: Tensor, w_focal: float = 20.0, w_dice: float = 1.0) -> Tensor:
    focal = sigmoid_focal_loss(logits, masks)
    dice = soft_dice_loss(logits, masks)
    return w_focal * focal + w_dice * dice


def validate(model, loader, threshold=0.5):
    model.eval()
    scores = []
    with torch.no_grad():
        for images, masks in loader:
            logits = model(images)
            pred = (torch.sigmoid(logits) > threshold).float()
            scores.append(1.0 - soft_dice_loss(pred * 20 - 10, masks))
    return torch.stack(scores).mean()
