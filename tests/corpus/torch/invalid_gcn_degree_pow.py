import torch
import torch.nn as nn


class GCNLayer(nn.Module):
    """Symmetric normalisation D^-1/2 A D^-1/2; isolated nodes have degree 0."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, x, adj):
        deg = adj.sum(dim=1)
        deg_inv_sqrt = deg.pow(-0.5)  # expect: pow/unguarded-domain
        norm_adj = deg_inv_sqrt[:, None] * adj * deg_inv_sqrt[None, :]
        return norm_adj @ self.lin(x)
