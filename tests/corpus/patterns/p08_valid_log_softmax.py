# covers: log-softmax
import torch.nn.functional as F
from torch import Tensor


def soft_cross_entropy(logits: Tensor, soft_targets: Tensor) -> Tensor:
    log_probs = F.log_softmax(logits, dim=-1)
    return -(soft_targets * log_probs).sum(dim=-1).mean()


def distillation_loss(student: Tensor, teacher: Tensor, t: float = 2.0) -> Tensor:
    return F.kl_div(F.log_softmax(student / t, dim=-1), F.log_softmax(teacher / t, dim=-1),
                    reduction="batchmean", log_target=True) * t * t
