import torch
from torch import Tensor


def patch_index(coords: Tensor, patch_size: Tensor) -> Tensor:
    """Map pixel coordinates to patch indices for a learned patch size."""
    row = torch.div(coords[:, 0], patch_size, rounding_mode="floor")  # expect: div/unguarded-domain
    col = coords[:, 1] // patch_size  # expect: div/unguarded-domain
    return torch.stack([row, col], dim=-1)
