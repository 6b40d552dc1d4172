"""How fast the dynamic pass proves the bugs of `bench/cases/`, against two baselines.

For every case: numcheck's search on the buggy program (time to trigger, the stage that got
there), the same on the fixed twin (which must stay silent), and two baselines with the same
time budget, run in the same process:

* ordinary inputs: the entry run on inputs like a training run feeds it (standard normal
  values clipped to the box, ints and bools uniform), over and over;
* random sampling: uniform draws from the same box (RANUM without its gradient stage).

    python -m bench.dynamic                 # every case, 10 s budget each
    python -m bench.dynamic -k p08 --budget 3 --json bench/out/dynamic.json

Prints per-case rows, then medians and the speed-up over random sampling on the cases random
sampling also solves. The ratios are the figures to quote: these machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from analyzers.dynamic.entries import (
    TORCH_DTYPES,
    EntryConfig,
    EntryError,
    build_configured,
    sample,
)
from analyzers.dynamic.search import Budget, Searcher
from analyzers.dynamic.specs import InputSpec

CASES_DIR = Path(__file__).parent / "cases"
MARKER = "# numcheck-bug:"


@dataclass
class Row:
    case: str
    framework: str
    op: str
    failure: str
    confirmed: bool | None  # None: not run (unsupported framework)
    seconds: float | None
    stage: str | None
    where: str | None
    evaluations: int
    fixed_confirmed: bool | None
    ordinary_seconds: float | None
    random_seconds: float | None
    note: str = ""


def _bug_line(path: Path) -> tuple[int, str]:
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if MARKER in text:
            return number, text.split(MARKER, 1)[1].strip().split()[0]
    raise ValueError(f"{path} has no '{MARKER} <op>' line")


def _entry(case_dir: Path, module: str, table: dict[str, Any], seed: int) -> Any:
    target = table["target"].replace("buggy:", f"{module}:", 1)
    return build_configured(case_dir, EntryConfig(target, tuple(table["inputs"]),
                                                   dict(table.get("init", {})),
                                                   table.get("dtype")), seed)


def _fresh_import(module: str) -> None:
    """buggy.py and fixed.py of different cases share names: forget the last case's module
    and its directory on sys.path, so the next import finds this case's file."""
    sys.modules.pop(module, None)
    cases = str(CASES_DIR.resolve())
    sys.path[:] = [p for p in sys.path if not p.startswith(cases)]


def _search(case_dir: Path, module: str, table: dict[str, Any], lines: frozenset[int],
            op: str, budget: float, seed: int) -> tuple[Any, Any]:
    _fresh_import(module)
    entry = _entry(case_dir, module, table, seed)
    searcher = Searcher(entry, str(case_dir / f"{module}.py"), lines, op,
                        dtype=table.get("dtype") or "float32", seed=seed,
                        budget=Budget(seconds=budget, evaluations=10**9))
    return searcher, searcher.run()


def _ordinary(spec: InputSpec, generator: torch.Generator) -> torch.Tensor:
    if not spec.is_float:
        return sample(spec, generator)
    values = torch.randn(spec.shape, generator=generator, dtype=torch.float64)
    return values.clamp(spec.lo, spec.hi).to(TORCH_DTYPES[spec.dtype])


def _baseline(searcher: Searcher, kind: str, budget: float, seed: int) -> float | None:
    """Seconds until a plain draw triggers the op, or None within the budget."""
    generator = torch.Generator().manual_seed(seed + 1)
    started = time.perf_counter()
    while time.perf_counter() - started < budget:
        draw = _ordinary if kind == "ordinary" else sample
        inputs = [draw(spec, generator) for spec in searcher.entry.specs]
        evaluation = searcher.evaluate(inputs)
        if evaluation.forward or evaluation.backward:
            return time.perf_counter() - started
    return None


def run_case(case_dir: Path, budget: float, seed: int) -> Row:
    meta = tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))
    line, op = _bug_line(case_dir / "buggy.py")
    framework = meta.get("framework", "torch")
    row = Row(case_dir.name, framework, op, meta.get("failure", "?"), None, None, None, None,
              0, None, None, None)
    table = meta["entry"]
    try:
        searcher, outcome = _search(case_dir, "buggy", table, frozenset({line}), op, budget,
                                    seed)
    except EntryError as exc:
        row.note = f"entry: {exc}"
        return row
    row.confirmed = outcome.triggered
    row.seconds = outcome.seconds if outcome.triggered else None
    row.stage, row.where, row.evaluations = outcome.stage, outcome.where, outcome.evaluations
    if outcome.error and not outcome.reached:
        row.note = outcome.error
    row.ordinary_seconds = _baseline(searcher, "ordinary", budget, seed)
    row.random_seconds = _baseline(searcher, "random", budget, seed)
    fixed_lines = frozenset(range(1, 1 + len(
        (case_dir / "fixed.py").read_text(encoding="utf-8").splitlines())))
    _, fixed = _search(case_dir, "fixed", table, fixed_lines, op, budget, seed)
    row.fixed_confirmed = fixed.triggered
    return row


def _run_safely(case_dir: Path, budget: float, seed: int) -> Row:
    try:
        return run_case(case_dir, budget, seed)
    except Exception as exc:  # one broken case must not hide the others' figures
        return Row(case_dir.name, "?", "?", "?", False, None, None, None, 0, None, None, None,
                   note=f"crashed: {type(exc).__name__}: {exc}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report(rows: list[Row], budget: float) -> dict[str, Any]:
    print(f"{'case':34} {'op':8} {'fail':8} {'found':5} {'s':>7} {'stage':9} "
          f"{'ordinary s':>10} {'random s':>9} {'fixed':5}")
    for r in rows:
        found = "-" if r.confirmed is None else ("yes" if r.confirmed else "NO")
        fixed = "-" if r.fixed_confirmed is None else ("NAN!" if r.fixed_confirmed else "ok")
        print(f"{r.case:34} {r.op:8} {r.failure:8} {found:5} {_fmt(r.seconds):>7} "
              f"{r.stage or '-':9} {_fmt(r.ordinary_seconds):>10} {_fmt(r.random_seconds):>9} "
              f"{fixed:5} {r.note}")
    ran = [r for r in rows if r.confirmed is not None]
    confirmed = [r for r in ran if r.confirmed]
    times = [r.seconds for r in confirmed if r.seconds is not None]
    both = [r for r in confirmed if r.random_seconds is not None and r.seconds]
    speedups = [r.random_seconds / max(r.seconds, 1e-6) for r in both
                if r.random_seconds is not None and r.seconds is not None]
    summary = {
        "cases": len(rows), "run": len(ran), "confirmed": len(confirmed),
        "median_seconds_to_trigger": statistics.median(times) if times else None,
        "ordinary_solved": sum(r.ordinary_seconds is not None for r in ran),
        "random_solved": sum(r.random_seconds is not None for r in ran),
        "median_speedup_vs_random": statistics.median(speedups) if speedups else None,
        "fixed_twins_confirmed": sum(bool(r.fixed_confirmed) for r in ran),
        "not_run": [r.case for r in rows if r.confirmed is None],
        "budget_seconds": budget,
    }
    print()
    print(f"confirmed {len(confirmed)}/{len(ran)} cases run ({len(rows) - len(ran)} not run: "
          f"no entry); budget {budget:g} s per search")
    hard = [r for r in both if r.random_seconds is not None and r.random_seconds > 0.05]
    if hard:
        ratios = [r.random_seconds / max(r.seconds or 0.0, 1e-6) for r in hard
                  if r.random_seconds is not None]
        print(f"on the {len(hard)} cases random sampling needs more than 50 ms for: median "
              f"speed-up {statistics.median(ratios):.1f}x")
    if times:
        print(f"median time to trigger: {statistics.median(times):.3f} s "
              f"(target < 1 s on the CPU)")
    print(f"ordinary inputs triggered {summary['ordinary_solved']}/{len(ran)}; random sampling "
          f"{summary['random_solved']}/{len(ran)}")
    if speedups:
        print(f"speed-up over random sampling on the {len(speedups)} cases it also solves: "
              f"median {statistics.median(speedups):.1f}x (target >= 10x)")
    print(f"fixed twins confirmed (must be 0): {summary['fixed_twins_confirmed']}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dynamic",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", action="append", default=[], metavar="TEXT",
                        help="only cases whose id contains TEXT (repeatable)")
    parser.add_argument("--budget", type=float, default=10.0,
                        help="seconds per search and per baseline (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=Path, default=CASES_DIR)
    parser.add_argument("--json", type=Path, help="write rows and summary to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dirs = sorted(p.parent for p in args.cases.glob("*/case.toml"))
    if args.k:
        dirs = [d for d in dirs if any(k in d.name for k in args.k)]
    if not dirs:
        print(f"no cases under {args.cases}", file=sys.stderr)
        return 2
    rows = [_run_safely(d, args.budget, args.seed) for d in dirs]
    summary = report(rows, args.budget)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "rows": [asdict(r) for r in rows]},
                                        indent=2), encoding="utf-8")
    failed = summary["confirmed"] < summary["run"] or summary["fixed_twins_confirmed"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
