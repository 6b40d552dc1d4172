import torch
import torch.nn.functional as F
from torch import nn


class Discriminator(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))

    def forward(self, x):
        return self.net(x)


def discriminator_loss(d: Discriminator, real, fake):
    real_loss = F.binary_cross_entropy(torch.sigmoid(d(real)), torch.ones(real.size(0), 1))  # expect: binary_cross_entropy/bce-sigmoid
    fake_loss = F.binary_cross_entropy(torch.sigmoid(d(fake)), torch.zeros(fake.size(0), 1))  # expect: binary_cross_entropy/bce-sigmoid
    return real_loss + fake_loss
