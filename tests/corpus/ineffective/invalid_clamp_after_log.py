import torch
from torch import Tensor


def clipped_log_likelihood(p: Tensor, y: Tensor) -> Tensor:
    """Clamping the output of log hides -inf in the forward pass, not the inf gradient."""
    log_p = torch.log(p).clamp(min=-100)  # expect: log/unguarded-domain
    log_q = torch.log(1 - p).clamp(min=-100)  # expect: log/unguarded-domain
    return -(y * log_p + (1 - y) * log_q).mean()
