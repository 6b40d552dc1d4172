# covers: manual-normalize
import torch
import torch.nn as nn
import torch.nn.functional as F


class CLIPHead(nn.Module):
    def __init__(self, dim: int, embed_dim: int, temperature: float = 0.07):
        super().__init__()
        self.image_proj = nn.Linear(dim, embed_dim, bias=False)
        self.text_proj = nn.Linear(dim, embed_dim, bias=False)
        self.temperature = temperature

    def forward(self, image_features, text_features):
        image_embeds = F.normalize(self.image_proj(image_features), dim=-1)
        text_embeds = F.normalize(self.text_proj(text_features), dim=-1)
        return image_embeds @ text_embeds.t() / self.temperature
