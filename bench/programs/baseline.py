"""numcheck's search against random mutation, on one program's script entry, in one process.

    python -m bench.programs.baseline REPO SCRIPT LINES OP BUDGET SEED

Run by `python -m bench.programs` as a child process with the program's repository as its
working directory, after the review. It records the script up to the op as script mode does,
then gives the same budget to the search (its stages, `analyzers.dynamic.stages`) and to random
mutation of the same external values (uniform draws in the same boxes over the same training
steps, stage by stage, each draw a full run of the program), and prints one JSON object on a
line of its own, after `MARKER`. This runs the program outside numcheck's sandbox: the
benchmark's programs are pinned by commit in programs.tsv, and nothing else should be run
this way.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from analyzers.dynamic.entries import EntryError
from analyzers.dynamic.script import ScriptConfig, build_script_entry
from analyzers.dynamic.search import Budget, Searcher
from analyzers.dynamic.stages import search_stages, stage_part, staged_search
from analyzers.dynamic.tensors import sample

MARKER = "numcheck-baseline: "


def _random(
    stages: list[Any], path: str, lines: frozenset[int], op: str, budget: float, seed: int
) -> dict[str, Any]:
    """Uniform draws in each stage's box: each stage before the last for the most of what is
    left of `budget` the search gives it (`staged_search`), the last for the rest."""
    generator = torch.Generator().manual_seed(seed + 1)
    started = time.perf_counter()
    draws = 0
    for number, stage in enumerate(stages):
        searcher = Searcher(
            stage, path, lines, op, dtype=stage.dtype, seed=seed, require_visible=False
        )
        left = budget - (time.perf_counter() - started)
        until = time.perf_counter() + left * stage_part(number, len(stages))
        while time.perf_counter() < until:
            draws += 1
            evaluation = searcher.evaluate([sample(spec, generator) for spec in stage.specs])
            if evaluation.forward or evaluation.backward:
                return {
                    "triggered": True,
                    "evaluations": draws,
                    "seconds": round(time.perf_counter() - started, 4),
                }
    return {
        "triggered": False,
        "evaluations": draws,
        "seconds": round(time.perf_counter() - started, 4),
    }


def measure(
    repo: Path, script: str, lines: frozenset[int], op: str, budget: float, seed: int
) -> dict[str, Any]:
    config = ScriptConfig.from_json({"command": script})
    path = str(repo / script)
    try:
        entry = build_script_entry(repo, config, script, lines, op, seed)
    except EntryError as exc:
        return {"error": str(exc)}
    _, outcome, _ = staged_search(
        entry, path, lines, op, seed, Budget(seconds=budget, evaluations=10**9)
    )
    result: dict[str, Any] = {
        "values": len(entry.specs),
        "search": {
            "triggered": outcome.triggered,
            "evaluations": outcome.evaluations,
            "seconds": round(outcome.seconds, 4),
        },
    }
    result["random"] = _random(search_stages(entry), path, lines, op, budget, seed)
    return result


def main(argv: list[str]) -> int:
    repo, script, lines, op, budget, seed = argv
    first, _, last = lines.partition("-")
    span = frozenset(range(int(first), int(last or first) + 1))
    result = measure(Path(repo).resolve(), script, span, op, float(budget), int(seed))
    print(MARKER + json.dumps(result))  # the program prints too: the last marked line counts
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
