# covers: unguarded-domain
"""Sliding-window dataset and batching helpers: tensors appear, but every division is by a size."""
import math
import random

import torch
from torch.utils.data import DataLoader, Dataset


class WindowDataset(Dataset):
    def __init__(self, series, window: int = 64, stride: int = 16):
        self.series = series
        self.window = window
        self.stride = stride
        self.n = max(0, (len(series) - window) // stride + 1)

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        start = idx * self.stride
        return torch.as_tensor(self.series[start:start + self.window], dtype=torch.float32)


def batch_mean(batch: torch.Tensor) -> torch.Tensor:
    return batch.sum(0) / batch.shape[0]


def split_indices(n: int, val_frac: float = 0.1, seed: int = 0):
    idx = list(range(n))
    random.Random(seed).shuffle(idx)
    n_val = int(math.ceil(n * val_frac))
    return idx[n_val:], idx[:n_val]


def steps_per_epoch(dataset_len: int, batch_size: int) -> int:
    return dataset_len // batch_size + (dataset_len % batch_size > 0)


def running_loss(loader: DataLoader, model) -> float:
    total = 0.0
    for batch in loader:
        total += model(batch).mean().item()
    return total / len(loader)


def token_budget(max_tokens: int, seq_len: int) -> int:
    return max(1, max_tokens // seq_len)
