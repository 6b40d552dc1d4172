# covers: eps-underflow-fp16
"""fp16 autocast training step with epsilons that float16 can represent."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FP16SafeLayerNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - mean) * torch.rsqrt(var + 1e-5) + self.bias


def grad_clip_coef(parameters, max_norm: float = 1.0) -> torch.Tensor:
    grads = [p.grad.detach() for p in parameters if p.grad is not None]
    total = torch.norm(torch.stack([g.norm(2) for g in grads]), 2)
    return torch.clamp(max_norm / (total + 1e-6), max=1.0)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def train_step(model, batch, optimizer, scaler):
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        out = model(batch["x"])
        loss = masked_mean(F.mse_loss(out, batch["y"], reduction="none"), batch["mask"]).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    coef = grad_clip_coef(model.parameters())
    for p in model.parameters():
        if p.grad is not None:
            p.grad.mul_(coef)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()
