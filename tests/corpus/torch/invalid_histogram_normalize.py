import torch


def intensity_histogram(img: torch.Tensor, bins: int = 64) -> torch.Tensor:
    """Normalised intensity histogram of an image crop (crops can be empty)."""
    hist = torch.histc(img.flatten(), bins=bins, min=0.0, max=1.0)
    return hist / hist.sum()  # expect: div/unguarded-domain
