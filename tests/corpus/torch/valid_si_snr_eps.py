# covers: unguarded-domain
import torch
from torch import Tensor


def snr_loss(estimate: Tensor, clean: Tensor) -> Tensor:
    signal_power = (clean ** 2).mean(dim=-1)
    noise_power = ((clean - estimate) ** 2).mean(dim=-1)
    snr = 10 * torch.log10(signal_power / (noise_power + 1e-8) + 1e-8)
    return -snr.mean()
