"""Differentiable photometric augmentation (random gamma) inside a training pipeline."""

import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def normalize(images: torch.Tensor) -> torch.Tensor:
    mean = torch.tensor(IMAGENET_MEAN, dtype=images.dtype).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, dtype=images.dtype).view(1, 3, 1, 1)
    return (images - mean) / std


def augment_and_normalize(images: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """images: [batch, 3, height, width] in [0, 1]; gamma: scalar drawn from [0.5, 2]."""
    x = normalize(images)
    x = x.pow(gamma)  # numcheck-bug: pow
    return x
