import torch
import torch.nn as nn


class CLIPHead(nn.Module):
    """Contrastive image-text logits on unit-normalised embeddings."""

    def __init__(self, dim: int, embed_dim: int, temperature: float = 0.07):
        super().__init__()
        self.image_proj = nn.Linear(dim, embed_dim, bias=False)
        self.text_proj = nn.Linear(dim, embed_dim, bias=False)
        self.temperature = temperature

    def forward(self, image_features, text_features):
        image_embeds = self.image_proj(image_features)
        text_embeds = self.text_proj(text_features)
        image_embeds = image_embeds / image_embeds.norm(dim=-1, keepdim=True)  # expect: div/manual-normalize
        text_embeds = text_embeds / text_embeds.norm(dim=-1, keepdim=True)  # expect: div/manual-normalize
        return image_embeds @ text_embeds.t() / self.temperature
