# covers: unguarded-domain
import math

import torch.nn as nn


def init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        fan_in = module.in_features
        std = math.sqrt(2.0 / fan_in)
        nn.init.normal_(module.weight, 0.0, std)
        if module.bias is not None:
            bound = 1 / math.sqrt(fan_in)
            nn.init.uniform_(module.bias, -bound, bound)
