# covers: manual-normalize, log-sum-exp, unguarded-domain
"""CLIP-style symmetric InfoNCE with a clamped learnable logit scale, plus a triplet margin term."""
import math

import torch as th
import torch.nn as nn
import torch.nn.functional as F


class ContrastiveHead(nn.Module):
    def __init__(self, dim_in: int, dim_out: int = 256, init_temperature: float = 0.07):
        super().__init__()
        self.image_proj = nn.Linear(dim_in, dim_out, bias=False)
        self.text_proj = nn.Linear(dim_in, dim_out, bias=False)
        self.logit_scale = nn.Parameter(th.ones([]) * math.log(1 / init_temperature))

    def forward(self, image_features, text_features):
        img = F.normalize(self.image_proj(image_features), dim=-1)
        txt = F.normalize(self.text_proj(text_features), dim=-1)
        scale = self.logit_scale.clamp(max=4.6052).exp()
        logits_per_image = scale * img @ txt.t()
        labels = th.arange(img.size(0), device=img.device)
        loss_i = F.cross_entropy(logits_per_image, labels)
        loss_t = F.cross_entropy(logits_per_image.t(), labels)
        return (loss_i + loss_t) / 2


def info_nce(query: th.Tensor, keys: th.Tensor, positive_idx: th.Tensor, tau: float = 0.1) -> th.Tensor:
    q = F.normalize(query, dim=-1)
    k = F.normalize(keys, dim=-1)
    logits = q @ k.t() / tau
    log_denom = th.logsumexp(logits, dim=-1)
    pos = logits.gather(1, positive_idx.view(-1, 1)).squeeze(1)
    return (log_denom - pos).mean()


def triplet_margin(anchor: th.Tensor, positive: th.Tensor, negative: th.Tensor, margin: float = 0.2) -> th.Tensor:
    d_pos = th.sqrt(((anchor - positive) ** 2).sum(-1) + 1e-8)
    d_neg = th.sqrt(((anchor - negative) ** 2).sum(-1) + 1e-8)
    return F.relu(d_pos - d_neg + margin).mean()
