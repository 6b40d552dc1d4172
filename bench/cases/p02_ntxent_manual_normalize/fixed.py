"""NT-Xent (SimCLR) contrastive loss over two augmented views of a batch."""

import torch
import torch.nn.functional as F


def nt_xent_loss(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """z1, z2: [batch, dim] projections of the two views; rows i of z1 and z2 are positives."""
    n = z1.shape[0]
    z = torch.cat([z1, z2], dim=0)
    z = F.normalize(z, dim=1, eps=1e-12)
    sim = z @ z.t() / temperature
    self_mask = torch.eye(2 * n, dtype=torch.bool)
    sim = sim.masked_fill(self_mask, torch.finfo(sim.dtype).min)
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)
