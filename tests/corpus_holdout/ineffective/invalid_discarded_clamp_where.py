"""Guards whose result is thrown away, and a torch.where that hides a NaN gradient."""
import torch
import torch.nn as nn


def log_likelihood_ratio(p_model: torch.Tensor, p_ref: torch.Tensor) -> torch.Tensor:
    p_ref = p_ref.clamp(min=1e-6)
    p_model.clamp(min=1e-6)  # expect: clamp/discarded-guard
    log_ref = torch.log(p_ref)
    return torch.log(p_model) - log_ref  # expect: log/unguarded-domain


class PointDistance(nn.Module):
    """Euclidean distance between matched points, 'made safe' with a single where."""

    def forward(self, a, b):
        d2 = ((a - b) ** 2).sum(-1)
        return torch.where(d2 > 0, torch.sqrt(d2), torch.zeros_like(d2))  # expect: sqrt/where-grad-leak


class ImportanceWeightedLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.dist = PointDistance()

    def forward(self, pred, target, p_model, p_ref):
        w = log_likelihood_ratio(p_model, p_ref).clamp(-5.0, 5.0).detach()
        return (w * self.dist(pred, target)).mean()


def fit(model, loss_fn, loader, epochs=3):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for _ in range(epochs):
        for x, target, p_model, p_ref in loader:
            loss = loss_fn(model(x), target, p_model, p_ref)
            opt.zero_grad()
            loss.backward()
            opt.step()
