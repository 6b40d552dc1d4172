import torch
from torch import Tensor


def kl_to_prior(posterior: Tensor, prior: Tensor) -> Tensor:
    """The clamp protects the posterior, but the prior goes into log unguarded."""
    posterior = posterior.clamp(min=1e-8)
    log_ratio = torch.log(posterior) - torch.log(prior)  # expect: log/unguarded-domain
    return (posterior * log_ratio).sum(dim=-1)
