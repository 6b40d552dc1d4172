import torch
from torch import Tensor


def snr_loss(estimate: Tensor, clean: Tensor) -> Tensor:
    """Negative SNR in dB for speech enhancement; a perfect estimate has zero noise."""
    signal_power = (clean ** 2).mean(dim=-1)
    noise_power = ((clean - estimate) ** 2).mean(dim=-1)
    snr = 10 * torch.log10(signal_power / noise_power)  # expect: log10/unguarded-domain, div/unguarded-domain
    return -snr.mean()
