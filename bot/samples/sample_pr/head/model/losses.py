import torch
import torch.nn.functional as F


def classification_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    probs = F.softmax(logits, dim=-1)
    picked = probs.gather(1, target.unsqueeze(1))
    return -torch.log(picked).mean()


def reconstruction_loss(x: torch.Tensor, x_reconstr_mean: torch.Tensor) -> torch.Tensor:
    # Bernoulli decoder, as in the classic VAE tutorial
    return -torch.sum(x * torch.log(1e-10 + x_reconstr_mean)
                      + (1 - x) * torch.log(1e-10 + 1 - x_reconstr_mean), dim=1).mean()


def kl_term(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    std = torch.exp(0.5 * logvar)
    return -0.5 * torch.sum(1 + torch.log(std ** 2) - mu ** 2 - std ** 2, dim=1).mean()


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a = a / a.norm(dim=-1, keepdim=True)
    b = b / (b.norm(dim=-1, keepdim=True) + 1e-8)
    return (a * b).sum(-1)
