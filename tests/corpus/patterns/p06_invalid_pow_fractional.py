import torch
from torch import Tensor


def srgb_to_linear(img: Tensor) -> Tensor:
    """sRGB decoding; network outputs can leave [0, 1] slightly."""
    linear = ((img + 0.055) / 1.055) ** 2.4  # expect: pow/unguarded-domain
    return linear


def box_cox(x: Tensor, lam: float = 0.5) -> Tensor:
    return (torch.pow(x, lam) - 1) / lam  # expect: pow/unguarded-domain
