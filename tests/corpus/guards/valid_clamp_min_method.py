# covers: unguarded-domain
import torch
from torch import Tensor


def segment_mean(values: Tensor, segment_ids: Tensor, num_segments: int) -> Tensor:
    """Mean of values per segment; empty segments have count 0."""
    sums = torch.zeros(num_segments, values.size(-1)).index_add_(0, segment_ids, values)
    counts = torch.bincount(segment_ids, minlength=num_segments).float().unsqueeze(-1)
    return sums / counts.clamp_min(1.0)
