import torch
from torch.distributions import Distribution, constraints


class GumbelLike(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}

    def mean_exp(self):
        return torch.exp(self.loc / self.scale)  # expect: exp/unguarded-domain
