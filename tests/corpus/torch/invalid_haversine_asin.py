import torch
from torch import Tensor


def haversine_km(lat1: Tensor, lon1: Tensor, lat2: Tensor, lon2: Tensor) -> Tensor:
    """Great-circle distance loss for geolocation models."""
    dlat = torch.deg2rad(lat2 - lat1)
    dlon = torch.deg2rad(lon2 - lon1)
    cos_prod = torch.cos(torch.deg2rad(lat1)) * torch.cos(torch.deg2rad(lat2))
    h = torch.sin(dlat / 2) ** 2 + cos_prod * torch.sin(dlon / 2) ** 2
    return 2 * 6371.0 * torch.asin(torch.sqrt(h))  # expect: asin/unguarded-domain, sqrt/unguarded-domain
