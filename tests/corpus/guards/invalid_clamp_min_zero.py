import torch
from torch import Tensor


def log_and_root(x: Tensor) -> tuple[Tensor, Tensor]:
    """clamp(min=0) keeps 0 itself: log(0) = -inf and sqrt has an infinite gradient at 0."""
    x = x.clamp(min=0)
    log_x = torch.log(x)  # expect: log/unguarded-domain
    root_x = torch.sqrt(x)  # expect: sqrt/unguarded-domain
    return log_x, root_x
