# covers: unguarded-domain
import torch
import torch.nn.functional as F
from torch import Tensor


def gamma_nll(y: Tensor, raw_shape: Tensor, raw_rate: Tensor) -> Tensor:
    shape = F.softplus(raw_shape)
    rate = F.softplus(raw_rate)
    return torch.lgamma(shape) - shape * torch.log(rate) - (shape - 1) * torch.log(y.clamp(min=1e-6)) + rate * y
