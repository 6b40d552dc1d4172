# covers: unguarded-domain
import torch
from torch import Tensor

PATCH = 16


def patch_index(coords: Tensor, width: int) -> Tensor:
    row = torch.div(coords[:, 0], PATCH, rounding_mode="floor")
    col = coords[:, 1] // PATCH
    n_cols = width // PATCH
    return row * n_cols + col
