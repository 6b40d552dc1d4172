"""One run of an entry under the op probe, as the search sees it (`Evaluation`), and the
per-restart objective of a batched run. Shared by the PyTorch searcher (search.py) and its
TensorFlow backend (tf_backend.py), which fill the same record."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from analyzers.dynamic.probe import Hit
from analyzers.dynamic.suspect import CallSite, suspect_loss


@dataclass
class Evaluation:
    """One run of the entry under the probe."""

    reached: bool = False  # the watched op ran at all
    loss: float = math.inf
    forward: bool = False  # the op's output went non-finite from finite operands
    backward: bool = False  # the op's local derivative went non-finite
    # where a standalone reproducer can see it, when the op failed: "output" (the entry's
    # output is NaN/Inf), "gradient" (the output is finite, but the gradient of the sum of
    # its float outputs reaching a float input is not), or None (the failure is absorbed)
    visible: str | None = None
    reaches_output: bool = False  # visible is not None
    error: str | None = None
    # the lines of the finding's file the error's traceback passed through, outermost first
    # (empty: it was raised before the call reached that file): how far a failing call got
    # (reshape.py)
    error_lines: tuple[int, ...] = ()
    grads: list[torch.Tensor | None] = field(default_factory=list)
    chunk_losses: list[float] = field(default_factory=list)  # per restart of a batched run
    batch_kept: bool = False  # every output kept the first input's leading rows


def suspect_loss_or_none(
    op: str, operand: torch.Tensor, dtype: str, call: CallSite
) -> torch.Tensor | None:
    """The objective, or None where this call's shapes do not fit it (a slice of a batch
    that is not a square matrix): guidance is lost, never the search."""
    try:
        return suspect_loss(op, operand, dtype, call)
    except (RuntimeError, ValueError, IndexError, TypeError):
        return None


def _split(value: Any, chunks: int, rows: int) -> list[Any]:
    """A tensor with `rows` leading rows cut into `chunks` pieces; anything else repeated."""
    if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == rows:
        return list(value.chunk(chunks, dim=0))
    return [value] * chunks


def chunk_losses(op: str, hit: Hit, dtype: str, chunks: int) -> list[float]:
    """The suspect loss of each restart of a batched run, where the operand kept the batch's
    leading dimension (inf for all where it did not: a reduction mixed the restarts)."""
    operand = hit.operand.detach()
    rows = operand.shape[0] if operand.dim() >= 1 else 0
    if rows == 0 or rows % chunks:
        return [math.inf] * chunks
    parts = _split(operand, chunks, rows)
    others = (
        list(zip(*[_split(o, chunks, rows) for o in hit.call.others], strict=True))
        if hit.call.others
        else [()] * chunks
    )
    out = []
    for part, other in zip(parts, others, strict=True):
        call = replace(
            hit.call, others=tuple(o.detach() if isinstance(o, torch.Tensor) else o for o in other)
        )
        value = suspect_loss_or_none(op, part, dtype, call)
        out.append(math.inf if value is None else float(value))
    return out


def keeps_rows(output: Any, rows: int) -> bool:
    """Is every tensor (torch or TensorFlow) in `output` `rows` long in its first dimension?"""
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, tuple | list):
        parts = [
            keeps_rows(o, rows)
            for o in output
            if hasattr(o, "shape") or isinstance(o, tuple | list | dict)
        ]
        return bool(parts) and all(parts)
    shape = getattr(output, "shape", None)
    return shape is not None and len(shape) >= 1 and shape[0] == rows


def guidance(op: str, dtype: str, hits: list[Hit], chunks: int) -> tuple[float, list[float]]:
    """The suspect loss of a run whose hits were recorded outside torch (JAX, NumPy), each
    crossed into torch, and the per-restart losses of a batched run: the gradient-free
    search's only guidance."""
    losses: list[float] = []
    per_chunk = [math.inf] * chunks if chunks > 1 else []
    for hit in hits:
        value = suspect_loss_or_none(op, hit.operand, dtype, hit.call)
        if value is not None:
            losses.append(float(value.detach().reshape(-1).min()))
        if per_chunk:
            for i, v in enumerate(chunk_losses(op, hit, dtype, chunks)):
                per_chunk[i] = min(per_chunk[i], v)
    return min(losses, default=math.inf), per_chunk
