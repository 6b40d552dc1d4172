"""Guards that protect the wrong thing: an unused clamped copy, a clamp to zero, a closed clamp."""
import torch
import torch.nn as nn
from torch import Tensor


def kl_categorical(p: Tensor, q: Tensor) -> Tensor:
    p_safe = p.clamp(min=1e-8)
    q_safe = q.clamp(min=1e-8)
    return (p_safe * (torch.log(p_safe) - torch.log(q))).sum(-1)  # expect: log/unguarded-domain


def log_intensity(image: Tensor) -> Tensor:
    image = image.clamp(min=0.0)
    return torch.log2(image)  # expect: log2/unguarded-domain


class TanhFlow(nn.Module):
    """Invertible tanh bijector used at the end of a normalising flow."""

    def forward(self, x):
        return torch.tanh(x)

    def inverse(self, y: Tensor) -> Tensor:
        y = y.clamp(-1.0, 1.0)
        return torch.atanh(y)  # expect: atanh


def distillation_loss(student_probs: Tensor, teacher_probs: Tensor, images: Tensor, alpha: float = 0.5):
    kl = kl_categorical(teacher_probs, student_probs).mean()
    brightness = log_intensity(images).mean()
    return kl + alpha * brightness
