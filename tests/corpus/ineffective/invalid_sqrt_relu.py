import torch
from torch import Tensor


def hinge_distance(margin: Tensor, d: Tensor) -> Tensor:
    """relu makes the operand non-negative, not positive: sqrt'(0) = inf."""
    return torch.sqrt(torch.relu(margin - d))  # expect: sqrt/unguarded-domain
