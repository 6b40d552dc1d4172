"""Smaller sizes for a synthesised call whose values never move the flagged op's operand.

tensor2tensor's timing signal divides by `num_timescales - 1`, where `num_timescales` is
half the input's channels; an unbiased variance divides by `n - 1`, `n` a length. The
search draws values inside a box of fixed shapes (the docstring's `[batch, length,
channels]` at the default sizes), so every evaluation sees the same divisor, and the search
can only end not-triggered. When every evaluation that reached the op saw one objective
(`Searcher.flat`), the sizes are what can move it: the call is searched again with each
dimension of its synthesised tensors cut to 2, then to 1 (the smallest sizes a batch, a
sequence or a channel axis takes without being empty), each in a part of the budget. Only
synthesised boxes shrink: a recorded call's shapes are the tests' own. The box states the
shapes, and says they were cut (source "resized"), so the proof and its reproducer show them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from analyzers.dynamic.entry import Entry
from analyzers.dynamic.search import Budget, Searcher

SIZES = (2, 1)
BUDGET_SHARE = 0.25  # of the finding's search budget, for each size


def resized(entry: Entry, size: int) -> Entry | None:
    """`entry` with every dimension above `size` of its synthesised inputs (default box) cut
    to `size`; None when no input changes or the call starts from given values."""
    if entry.start is not None:
        return None
    specs = [
        dataclasses.replace(spec, shape=tuple(min(d, size) for d in spec.shape), source="resized")
        if spec.source == "default" and max(spec.shape, default=0) > size
        else spec
        for spec in entry.specs
    ]
    return None if specs == list(entry.specs) else dataclasses.replace(entry, specs=specs)


def smaller_calls(entry: Entry, searcher: Searcher) -> Iterator[Entry]:
    """The synthesised call at each of SIZES in turn, when its search was flat."""
    if entry.source != "synthesised" or not searcher.flat:
        return
    for size in SIZES:
        smaller = resized(entry, size)
        if smaller is not None:
            yield smaller


def share(budget: Budget) -> Budget:
    """The budget of one smaller call's search."""
    return dataclasses.replace(
        budget,
        seconds=budget.seconds * BUDGET_SHARE,
        evaluations=max(int(budget.evaluations * BUDGET_SHARE), 1),
    )
