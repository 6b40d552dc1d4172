# covers: unguarded-domain
import torch
from torch import Tensor


def moment_matching_loss(pred: Tensor, target: Tensor) -> Tensor:
    """Match the first four moments of the residuals (integer powers only)."""
    diff = pred - target
    mse = (diff ** 2).mean()
    skew = torch.pow(diff, 3).mean()
    kurt = diff.pow(4).mean()
    return mse + 0.1 * skew.abs() + 0.01 * kurt
