import torch


def normalise(values, total):
    """Unknown argument types, but torch.div is a framework call and always checked."""
    return torch.div(values, total)  # expect: div/unguarded-domain
