"""Discrete-time survival likelihood (logistic hazard, as in nnet-survival / pycox)."""

import torch
import torch.nn.functional as F


def logistic_hazard_nll(
    hazard_logits: torch.Tensor, event_time: torch.Tensor, event_observed: torch.Tensor
) -> torch.Tensor:
    """hazard_logits: [batch, intervals]; event_time: [batch] interval index of the event or
    censoring; event_observed: [batch] bool, False for censored subjects."""
    hazard = torch.sigmoid(hazard_logits)
    # log(1 - sigmoid(x)) = -softplus(x); log1p(-hazard) is log1p(-1) = -inf once the
    # sigmoid rounds to 1
    log_survive = -F.softplus(hazard_logits)
    log_event = F.logsigmoid(hazard_logits)
    steps = torch.arange(hazard_logits.shape[1])[None, :]
    before = (steps < event_time[:, None]).to(hazard.dtype)
    at = (steps == event_time[:, None]).to(hazard.dtype)
    ll_event = (log_event * at).sum(dim=1) + (log_survive * before).sum(dim=1)
    ll_censored = (log_survive * (before + at)).sum(dim=1)
    ll = torch.where(event_observed, ll_event, ll_censored)
    return -ll.mean()
