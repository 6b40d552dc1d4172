"""The layout of `bench/cases/` that the dynamic and the fix benchmarks both read: one folder
per case with `case.toml`, and a `buggy.py` whose bug line carries `# numcheck-bug: <op>`
(bench/cases/README.md). No torch import here: `bench.fixes` imports it lazily."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

CASES_DIR = Path(__file__).parent / "cases"
MARKER = "# numcheck-bug:"


def bug_line(path: Path) -> tuple[int, str]:
    """The marked line's number and the op named after the marker."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if MARKER in text:
            return number, text.split(MARKER, 1)[1].strip().split()[0]
    raise ValueError(f"{path} has no '{MARKER} <op>' line")


def case_dirs(root: Path, only: Sequence[str] = ()) -> list[Path]:
    """The case folders under `root`, sorted; with `only`, those whose name contains one of
    the given texts (`-k`)."""
    dirs = sorted(p.parent for p in root.glob("*/case.toml"))
    return [d for d in dirs if any(k in d.name for k in only)] if only else dirs


def case_parser(
    prog: str, description: str, budget: float, budget_help: str
) -> argparse.ArgumentParser:
    """The options every benchmark over the cases takes: which cases, the search budget, the
    seed, and where to write its JSON."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "-k",
        action="append",
        default=[],
        metavar="TEXT",
        help="only cases whose id contains TEXT (repeatable)",
    )
    parser.add_argument(
        "--budget", type=float, default=budget, help=f"{budget_help} (default {budget:g})"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=Path, default=CASES_DIR)
    parser.add_argument("--json", type=Path, help="write rows and summary to this file")
    return parser
