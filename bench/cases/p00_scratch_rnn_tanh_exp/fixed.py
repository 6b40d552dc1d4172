"""Elman RNN written from scratch (course-style), run over raw sensor features."""

import torch
from torch import nn


def tanh(x: torch.Tensor) -> torch.Tensor:
    # exp(+-x) overflows for |x| > 88.7 and gives inf / inf: use the library tanh
    return torch.tanh(x)


class ScratchRNN(nn.Module):
    def __init__(self, input_size: int = 4, hidden_size: int = 8, output_size: int = 2) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.w_ih = nn.Linear(input_size, hidden_size)
        self.w_hh = nn.Linear(hidden_size, hidden_size, bias=False)
        self.head = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [batch, steps, input_size], un-normalised readings
        h = x.new_zeros(x.shape[0], self.hidden_size)
        for t in range(x.shape[1]):
            h = tanh(self.w_ih(x[:, t]) + self.w_hh(h))
        return self.head(h)
