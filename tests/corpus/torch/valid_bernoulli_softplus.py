# covers: log-sigmoid, bce-sigmoid
import torch.nn.functional as F
from torch import Tensor


def bernoulli_nll(logits: Tensor, targets: Tensor) -> Tensor:
    pos = targets * F.logsigmoid(logits)
    neg = (1 - targets) * -F.softplus(logits)
    return -(pos + neg).mean()


def bernoulli_nll_fused(logits: Tensor, targets: Tensor) -> Tensor:
    return F.binary_cross_entropy_with_logits(logits, targets)
