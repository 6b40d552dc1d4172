# covers: unguarded-domain
import math

import torch
from torch import Tensor


def gaussian_log_prob(x: Tensor, mu: Tensor, sigma: Tensor) -> Tensor:
    assert sigma.min() > 0
    z = (x - mu) / sigma
    return -0.5 * z ** 2 - torch.log(sigma) - 0.5 * math.log(2 * math.pi)
