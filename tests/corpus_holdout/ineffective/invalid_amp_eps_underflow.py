"""Mixed-precision fine-tuning loop whose hand-written epsilons vanish in float16."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import GradScaler


def clip_gradients(parameters, max_norm: float = 1.0) -> torch.Tensor:
    parameters = [p for p in parameters if p.grad is not None]
    total_norm = torch.norm(torch.stack([p.grad.detach().norm(2) for p in parameters]), 2)
    clip_coef = max_norm / (total_norm + 1e-8)  # expect: div/eps-underflow-fp16
    clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
    for p in parameters:
        p.grad.detach().mul_(clip_coef_clamped)
    return total_norm


class CosineHead(nn.Module):
    def __init__(self, dim: int, n_cls: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_cls, dim))

    def forward(self, x):
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        x = (x - x.mean(dim=-1, keepdim=True)) * torch.rsqrt(var + 1e-10)  # expect: rsqrt/eps-underflow-fp16
        w = F.normalize(self.weight, dim=-1)
        return x @ w.t()


def train_epoch(model, loader, optimizer, device="cuda"):
    scaler = GradScaler()
    model.train()
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = model(inputs)
            loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        clip_gradients(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
