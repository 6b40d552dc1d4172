"""The search in stages of widening boxes, the most credible first.

An entry's inputs are searched first in the box the code was seen with; when that reaches the
op without failing it, in that box widened to the default one (`Entry.widened`); and a script
entry then over its first training steps (`ScriptEntry.over_steps`). The harness confirms
findings this way, and bench.programs gives random mutation the same stages and budget.
"""

from __future__ import annotations

import dataclasses

from analyzers.dynamic.entry import Entry
from analyzers.dynamic.script import TRAINING_STEPS, ScriptEntry
from analyzers.dynamic.search import DIRECTED_STAGES, STAGES, Budget, Outcome, Searcher

# The part of the budget the box the code was seen with may take: most of it, since a
# trigger there is the most credible and an evaluation of a script can take a tenth of a
# second (its restarts and snapping alone then need several seconds).
FIRST_STAGE_SHARE = 0.75


def search_stages(entry: Entry) -> list[Entry]:
    """The entries `staged_search` tries in turn: `entry`, its widened box, and for a script
    that box over the first training steps."""
    wider = entry.widened()
    stages = [entry] if wider is None else [entry, wider]
    if isinstance(stages[-1], ScriptEntry):  # then through the first training steps
        stages.append(stages[-1].over_steps(TRAINING_STEPS))
    return stages


def stage_part(number: int, count: int) -> float:
    """The part of what is left of the budget stage `number` (0 first) of `count` may use:
    `FIRST_STAGE_SHARE` for the first, half for one in between, the rest for the last."""
    if number == count - 1:
        return 1.0
    return FIRST_STAGE_SHARE if number == 0 else 0.5


def staged_search(
    entry: Entry,
    path: str,
    lines: frozenset[int],
    op: str,
    seed: int,
    budget: Budget,
    require_visible: bool = False,
) -> tuple[Entry, Outcome, Searcher]:
    """The search over `search_stages(entry)`. A stage before the last runs the directed
    stages only (no open-ended fallback), within its `stage_part` of what is left of the
    budget, so the most credible box goes first and an exhausted one hands its time on. The
    stage that ran last is returned, so the finding states its box and steps."""
    stages = search_stages(entry)
    if not entry.specs:  # nothing to search (a fresh metric's result()): one call says it all
        budget = dataclasses.replace(budget, evaluations=1)
    runs, seconds = 0, 0.0
    for number, stage in enumerate(stages):
        last = number == len(stages) - 1
        part = stage_part(number, len(stages))
        share = dataclasses.replace(
            budget,
            seconds=max(budget.seconds - seconds, 0.0) * part,
            evaluations=max(int((budget.evaluations - runs) * part), 1),
        )
        searcher = Searcher(
            stage,
            path,
            lines,
            op,
            dtype=stage.dtype,
            seed=seed,
            budget=share,
            require_visible=require_visible,
            stages=STAGES if last else DIRECTED_STAGES,
        )
        outcome = searcher.run(stage.start)
        # the finding counts every run and second, every stage's
        outcome.evaluations += runs
        outcome.seconds += seconds
        runs, seconds = outcome.evaluations, outcome.seconds
        if outcome.triggered or not outcome.reached:
            break
    return stage, outcome, searcher
