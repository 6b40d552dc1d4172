"""Hand-written cross-entropy with label smoothing for an image classifier."""

import torch


def label_smoothing_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, smoothing: float = 0.1
) -> torch.Tensor:
    """logits: [batch, classes]; targets: [batch] class indices.

    log_softmax, not log(softmax): a probability that underflows to 0 gives log(0) = -inf.
    """
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(dim=-1, index=targets.unsqueeze(-1)).squeeze(-1)
    smooth = -log_probs.mean(dim=-1)
    loss = (1.0 - smoothing) * nll + smoothing * smooth
    return loss.mean()
