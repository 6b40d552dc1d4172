import torch.nn as nn


class PoissonHead(nn.Module):
    """Predicts event rates; trained with the Poisson negative log-likelihood."""

    def __init__(self, dim: int):
        super().__init__()
        self.rate = nn.Linear(dim, 1)

    def forward(self, x, counts):
        rate = self.rate(x).squeeze(-1)
        nll = rate - counts * rate.log()  # expect: log/unguarded-domain
        expected_wait = rate.reciprocal()  # expect: reciprocal/unguarded-domain
        return nll.mean(), expected_wait
