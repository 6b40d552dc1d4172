"""Supervised contrastive loss (Khosla et al. 2020), hand-rolled the way many repositories copy it."""
import torch
import torch.nn as nn


def l2_normalize(features: torch.Tensor) -> torch.Tensor:
    return features / features.norm(dim=-1, keepdim=True)  # expect: div/manual-normalize


class SupConLoss(nn.Module):
    def __init__(self, temperature: float = 0.07, base_temperature: float = 0.07):
        super().__init__()
        self.temperature = temperature
        self.base_temperature = base_temperature

    def forward(self, features, labels):
        features = l2_normalize(features)
        batch_size = features.shape[0]
        labels = labels.contiguous().view(-1, 1)
        mask = torch.eq(labels, labels.T).float()
        sim = torch.matmul(features, features.T) / self.temperature
        logits = sim - sim.max(dim=1, keepdim=True).values
        logits_mask = torch.ones_like(mask) - torch.eye(batch_size, device=mask.device)
        mask = mask * logits_mask
        log_prob = logits - torch.log(torch.exp(logits).sum(1, keepdim=True))
        mean_log_prob_pos = (mask * log_prob).sum(1) / mask.sum(1)  # expect: div/unguarded-domain
        loss = -(self.temperature / self.base_temperature) * mean_log_prob_pos
        return loss.mean()


class ProjectionHead(nn.Module):
    def __init__(self, dim_in: int = 2048, feat_dim: int = 128):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim_in, dim_in), nn.ReLU(inplace=True), nn.Linear(dim_in, feat_dim))

    def forward(self, x):
        return self.mlp(x)


def supcon_step(backbone, head, criterion, images, labels, optimizer):
    feats = head(backbone(images))
    loss = criterion(feats, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()
