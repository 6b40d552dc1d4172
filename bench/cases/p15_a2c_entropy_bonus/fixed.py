"""Advantage actor-critic loss with an entropy bonus (discrete actions)."""

import torch
import torch.nn.functional as F


def a2c_loss(
    logits: torch.Tensor,
    actions: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    value_coef: float = 0.5,
    entropy_coef: float = 0.01,
) -> torch.Tensor:
    """logits: [batch, actions]; actions: [batch]; advantages, values, returns: [batch]."""
    log_probs = F.log_softmax(logits, dim=-1)
    probs = log_probs.exp()
    action_log_probs = log_probs.gather(1, actions[:, None]).squeeze(1)
    policy_loss = -(action_log_probs * advantages.detach()).mean()
    value_loss = F.mse_loss(values, returns)
    # p * log(p) is 0 * -inf when a probability underflows: reuse the finite log_softmax
    entropy = -(probs * log_probs).sum(dim=-1)
    return policy_loss + value_coef * value_loss - entropy_coef * entropy.mean()
