import torch
from torch import Tensor


def log_residual(pred: Tensor, target: Tensor) -> Tensor:
    """An epsilon does not help when the operand can be negative."""
    residual = target - pred
    return torch.log(residual + 1e-6)  # expect: log/unguarded-domain
