# covers: unguarded-domain
import math

import torch
from torch.distributions import Distribution, constraints


class HalfCauchyLike(Distribution):
    arg_constraints = {"scale": constraints.positive, "loc": constraints.real}

    def log_prob(self, value):
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - torch.log(self.scale) - torch.log1p(z * z)
