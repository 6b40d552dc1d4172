import torch
from torch import Tensor


def log_rates(rates: Tensor) -> Tensor:
    out = torch.log(rates)  # expect: log/unguarded-domain
    assert (rates > 0).all(), "rates must be positive"
    return out
