import torch
from torch import Tensor


def unit_direction(v: Tensor) -> Tensor:
    """Direction of a displacement vector field, e.g. for flow-based augmentation."""
    return v / torch.sqrt((v ** 2).sum())  # expect: div/manual-normalize


def normalise_weight(w: Tensor) -> Tensor:
    return w / torch.norm(w)  # expect: div/manual-normalize
