"""Precision divergence: the op is finite in float32 and NaN/Inf in the low precision a model
trains in (float16 or bfloat16, by `.half()` or under `torch.autocast`).

Teams meet these as "fine in float32, NaN under AMP": an epsilon that is 0 in float16, a
matmul that overflows 65504, a `1 - p` that rounds to 0 in bfloat16. Two views, both run in the
sandboxed harness:

- an entry that already runs in low precision (configured `dtype`/`autocast`) gets a float32
  twin (`Entry.in_dtype`), run on the same trigger: finite there makes it a precision finding;
- a float32 entry whose search triggered nothing is searched again under autocast (a Keras
  layer: under the `mixed_float16`/`mixed_bfloat16` policy), in the precision the repository
  declares first, then bfloat16 and float16.

The finding states the precision, how it was applied and what float32 made of the same inputs;
its reproducer runs both (writer.py).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from analyzers.dtypes import LOW_PRECISIONS, Float32Verdict, PrecisionMode
from analyzers.dynamic.entry import Entry, cast_inputs
from analyzers.dynamic.search import Budget, Outcome, Searcher
from analyzers.dynamic.stages import staged_search

# What a repository says about its training precision: autocast's dtype, `.half()`, the dtype
# names, Keras's `mixed_float16`/`mixed_bfloat16` policies (where `_` before the name is no
# word boundary, hence the lookbehinds). Read from the checkout's Python files (at most
# `_SCANNED` of them, a few MB): a float16 mention that is not one makes float16 go first,
# which costs nothing but order.
_PATTERNS = {
    "bfloat16": re.compile(r"(?<![A-Za-z0-9])bfloat16\b|\bbf16\b"),
    "float16": re.compile(r"\.half\(|(?<![A-Za-z0-9])float16\b|\bfp16\b|\bcuda\.amp\b|GradScaler"),
}
_SCANNED = 400
_SKIPPED = {".git", ".venv", "venv", "node_modules", "__pycache__", "site-packages"}


@functools.cache
def declared_precisions(repo: Path) -> list[str]:
    """The low precisions the checkout's code mentions, most mentioned first (read once per
    checkout: every finding of a run asks)."""
    counts = dict.fromkeys(LOW_PRECISIONS, 0)
    for path in _python_files(repo):
        try:
            text = path.read_text(errors="replace")[:200_000]
        except OSError:
            continue
        for dtype, pattern in _PATTERNS.items():
            counts[dtype] += len(pattern.findall(text))
    return sorted((d for d in LOW_PRECISIONS if counts[d]), key=lambda d: -counts[d])


def _python_files(repo: Path) -> Iterator[Path]:
    """Up to `_SCANNED` Python files of the checkout, in a stable order, never through a
    symbolic link (the checkout is the PR's)."""
    seen = 0
    for folder, dirs, files in os.walk(repo):  # os.walk does not follow links to folders
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".py") and not path.is_symlink():
                yield path
                seen += 1
                if seen >= _SCANNED:
                    return


def precisions_to_try(declared: Sequence[str]) -> list[str]:
    """The repository's declared precisions, then the others of `LOW_PRECISIONS`."""
    return list(dict.fromkeys([*declared, *LOW_PRECISIONS]))


def float32_verdict(
    entry: Entry, path: str, lines: frozenset[int], op: str, inputs: Sequence[torch.Tensor]
) -> Float32Verdict | None:
    """What the op makes of `inputs` in float32: "finite" (a precision finding), "fails" (a
    float32 bug too), "unreached" or "error"; None where no faithful float32 twin exists."""
    twin = entry.in_dtype("float32")
    if twin is None:
        return None
    evaluation = Searcher(twin, path, lines, op).evaluate(cast_inputs(inputs, "float32"))
    if evaluation.error:
        return "error"
    if not evaluation.reached:
        return "unreached"
    return "fails" if evaluation.forward or evaluation.backward else "finite"


def differential(
    entry: Entry, path: str, lines: frozenset[int], op: str, inputs: Sequence[torch.Tensor]
) -> dict[str, Any] | None:
    """The precision block of a trigger found in low precision, or None for a float32 one
    or one without a float32 twin."""
    if entry.dtype not in LOW_PRECISIONS:
        return None
    verdict = float32_verdict(entry, path, lines, op, inputs)
    if verdict is None:
        return None
    mode: PrecisionMode = (
        "cast"
        if not entry.autocast
        else "policy"
        if entry.framework == "tensorflow"
        else "autocast"
    )
    return {"dtype": entry.dtype, "mode": mode, "float32": verdict}


def mark_precision(
    entry: Entry, path: str, lines: frozenset[int], op: str, inputs: Sequence[torch.Tensor]
) -> dict[str, Any] | None:
    """`differential`, and a precision finding's entry marked so that its reproducer checks
    float32 first (`Entry.float32_reference`)."""
    block = differential(entry, path, lines, op, inputs)
    if block is not None:
        entry.float32_reference = block["float32"] == "finite"
    return block


@dataclass
class LowPrecisionSearch:
    """What `low_precision_search` did: the stage that triggered (its outcome counting every
    run and second of the precisions tried before it), or None; the precisions searched; and
    the runs and seconds of them all."""

    found: tuple[Entry, Outcome, Searcher] | None
    searched: list[str]
    evaluations: int = 0
    seconds: float = 0.0


def low_precision_search(
    entry: Entry,
    path: str,
    lines: frozenset[int],
    op: str,
    seed: int,
    budget: Budget,
    require_visible: bool,
    dtypes: Sequence[str],
) -> LowPrecisionSearch:
    """A float32 entry searched again under autocast in each of `dtypes`, the budget shared
    equally, until one triggers."""
    twins = [(dtype, twin) for dtype in dtypes if (twin := entry.under_autocast(dtype)) is not None]
    done = LowPrecisionSearch(None, [])
    for dtype, twin in twins:
        share = dataclasses.replace(
            budget,
            seconds=budget.seconds / len(twins),
            evaluations=max(budget.evaluations // len(twins), 1),
        )
        stage, outcome, searcher = staged_search(
            twin, path, lines, op, seed, share, require_visible
        )
        done.searched.append(dtype)
        outcome.evaluations += done.evaluations
        outcome.seconds += done.seconds
        done.evaluations, done.seconds = outcome.evaluations, outcome.seconds
        if outcome.triggered:
            done.found = (stage, outcome, searcher)
            break
    return done
