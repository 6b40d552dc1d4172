"""python -m bench.programs: review every program in script mode and print the figures.

    python -m bench.programs                          # all programs, with the random baseline
    python -m bench.programs -k grist-26 --no-baseline
    python -m bench.programs --json bench/out/programs.json

Exit status 0 when it ran (the targets are reported, not enforced), 2 when the program list
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analyzers.report.jsonout import finding_from_json
from bench.programs.prepare import PROGRAMS, Program, build_repository, load_programs
from bench.realworld.review import default_mirrors, find_clone
from runners.dependencies import DependencyError, prepare

TARGETS = {
    "confirmed": 0.90,
    "median_wall_seconds": 30.0,
    "median_trigger_seconds": 1.0,
    "evaluation_ratio": 5.0,
}
# The bench's budget, the same for every program; the program itself is configured with its
# script command only.
SEARCH_SECONDS = 10.0


@dataclass
class Row:
    program: Program
    outcome: str  # confirmed | flagged | missed | error | missing
    reason: str = ""
    wall_seconds: float | None = None
    trigger_seconds: float | None = None
    evaluations: int | None = None
    steps: int | None = None  # the training step the trigger needed (1: the first)
    status: str | None = None  # the status of the finding at the line
    missing_files: int = 0
    baseline: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # the review's, by stage

    @property
    def proof_seconds(self) -> float | None:
        """The review's wall time less its fix stage (which checks candidate fixes for every
        confirmed finding): the time to the proof."""
        if self.wall_seconds is None:
            return None
        return self.wall_seconds - self.timings.get("fix", 0.0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.programs", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--mirrors",
        type=Path,
        default=None,
        help="folder of clones (default: $NUMCHECK_MIRRORS or bench/out/mirrors)",
    )
    parser.add_argument("--programs", type=Path, default=PROGRAMS)
    parser.add_argument(
        "-k",
        dest="only",
        action="append",
        default=[],
        help="only programs whose id contains this text (repeatable)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="wall-clock limit per review, seconds (default 300)",
    )
    parser.add_argument("--search-seconds", type=float, default=SEARCH_SECONDS)
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the random-mutation baseline"
    )
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    return parser


def _config(scratch: Path, program: Program, search_seconds: float, timeout: float) -> Path:
    config = scratch / "numcheck.toml"
    config.write_text(
        f"[tool.numcheck]\nsearch_seconds = {search_seconds}\n"
        f"dynamic_timeout = {max(int(timeout) - 30, 30)}\n\n"
        f"[tool.numcheck.script]\ncommand = {json.dumps(program.script)}\n",
        encoding="utf-8",
    )
    return config


def _matches(program: Program, finding: Any) -> bool:
    return (
        finding.path == program.script
        and finding.op == program.op
        and (finding.line in program.lines or finding.end_line in program.lines)
    )


def _score(row: Row, findings: list[Any]) -> None:
    at_line = [f for f in findings if _matches(row.program, f)]
    if not at_line:
        row.outcome, row.reason = "missed", "no finding on the buggy line"
        return
    best = next((f for f in at_line if f.status == "confirmed"), at_line[0])
    row.status = best.status
    row.outcome = "confirmed" if best.status == "confirmed" else "flagged"
    trigger = best.trigger or {}
    row.trigger_seconds = trigger.get("seconds")
    row.evaluations = trigger.get("evaluations")
    row.steps = trigger.get("steps")
    if best.status != "confirmed":
        row.reason = f"{best.status}: {(best.error or '').strip()[:300]}"


def review(
    program: Program, mirrors: Path, *, timeout: float, search_seconds: float, baseline: bool
) -> Row:
    clone = find_clone(mirrors, program.repo)
    if clone is None:
        return Row(program, "missing", f"no clone of {program.repo} under {mirrors}")
    with tempfile.TemporaryDirectory(prefix="numcheck-programs-") as scratch_name:
        scratch = Path(scratch_name)
        repo = scratch / "repo"
        try:
            base, head, missing = build_repository(program, clone, repo)
        except (ValueError, subprocess.CalledProcessError) as exc:
            return Row(program, "missing", str(exc))
        out = scratch / "result.json"
        argv = [
            sys.executable,
            "-m",
            "bot.cli",
            "review",
            str(repo),
            "--base",
            base,
            "--head",
            head,
            "--format",
            "json",
            "-o",
            str(out),
            "--quiet",
            "--config",
            str(_config(scratch, program, search_seconds, timeout)),
        ]
        started = time.monotonic()
        row = Row(program, "error", missing_files=len(missing))
        try:
            proc = subprocess.run(
                argv, cwd=scratch, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            row.reason = f"the review did not finish within {timeout:.0f} s"
            row.wall_seconds = time.monotonic() - started
            return row
        row.wall_seconds = time.monotonic() - started
        if proc.returncode not in (0, 1) or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            row.reason = f"exit {proc.returncode}: {tail[0][:300]}"
            return row
        data = json.loads(out.read_text(encoding="utf-8"))
        row.timings = data.get("timings", {})
        _score(row, [finding_from_json(f) for f in data["findings"]])
        if baseline and row.outcome in ("confirmed", "flagged"):
            row.baseline = _baseline(program, repo, search_seconds, timeout)
    return row


def _baseline(program: Program, repo: Path, budget: float, timeout: float) -> dict[str, Any]:
    from bench.programs.baseline import MARKER  # torch: imported only when it runs

    lines = f"{program.first}-{program.last}"
    argv = [
        sys.executable,
        "-m",
        "bench.programs.baseline",
        str(repo),
        program.script,
        lines,
        program.op,
        str(budget),
        "0",
    ]
    # the packages the review installed for the program (its imports: nothing is declared),
    # from the same cache, after numcheck's own
    paths = [str(Path(__file__).resolve().parents[2])]
    try:
        site = prepare(repo).site
    except DependencyError:
        site = None
    if site is not None:
        paths.append(str(site))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "MPLBACKEND": "Agg"}
    try:
        proc = subprocess.run(
            argv,
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=min(timeout, 4 * budget + 120),
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return {"error": "the baseline did not finish in time"}
    marked = [line for line in proc.stdout.splitlines() if line.startswith(MARKER)]
    if not marked:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit {proc.returncode}: {tail[0][:300]}"}
    result: dict[str, Any] = json.loads(marked[-1][len(MARKER) :])
    return result


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else f"{n}/0"


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def _cell(value: float | int | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _row(row: Row) -> str:
    b = row.baseline
    search, random = b.get("search", {}), b.get("random", {})

    def solved(side: dict[str, Any]) -> str:
        if not side:
            return "-"
        return f"{side['evaluations']}{'' if side['triggered'] else ' (no)'}"

    return (
        f"{row.program.id:<10} {row.outcome:<9} {_cell(row.wall_seconds, '.0f'):>5} "
        f"{_cell(row.proof_seconds, '.0f'):>5} "
        f"{_cell(row.trigger_seconds):>7} {_cell(row.evaluations, 'd'):>5} "
        f"{_cell(row.steps, 'd'):>5} "
        f"{solved(search):>9} {solved(random):>9}  {row.reason or b.get('error', '')}"
    )


def summary(rows: Sequence[Row]) -> list[str]:
    counted = [r for r in rows if r.outcome != "missing"]
    confirmed = [r for r in counted if r.outcome == "confirmed"]
    walls = [r.wall_seconds for r in counted if r.wall_seconds is not None]
    proofs = [r.proof_seconds for r in counted if r.proof_seconds is not None]
    triggers = [r.trigger_seconds for r in confirmed if r.trigger_seconds is not None]
    both = [
        r
        for r in rows
        if r.baseline.get("search", {}).get("triggered")
        and r.baseline.get("random", {}).get("triggered")
    ]
    ratios = [
        r.baseline["random"]["evaluations"] / max(r.baseline["search"]["evaluations"], 1)
        for r in both
    ]
    only_search = sum(
        1
        for r in rows
        if r.baseline.get("search", {}).get("triggered")
        and not r.baseline.get("random", {}).get("triggered")
    )
    lines = [
        f"programs: {len(rows)} ({len(rows) - len(counted)} missing from the mirrors)",
        f"confirmed at the line: {_pct(len(confirmed), len(counted))}"
        f" (target {TARGETS['confirmed']:.0%})",
        f"flagged at the line, not confirmed: {sum(1 for r in counted if r.outcome == 'flagged')}",
        f"median wall time per program: {_median(walls)} s"
        f" (target < {TARGETS['median_wall_seconds']:g} s); without the fix stage "
        f"{_median(proofs)} s",
        f"median time to trigger (confirmed): {_median(triggers)} s"
        f" (target < {TARGETS['median_trigger_seconds']:g} s)",
        f"confirmed at a later training step than the first: "
        f"{sum(1 for r in confirmed if (r.steps or 1) > 1)}",
        f"baseline, same budget: search and random both trigger on {len(both)}, only the "
        f"search on {only_search}; random/search evaluations median "
        f"{_median(ratios)}x (target >= {TARGETS['evaluation_ratio']:g}x)",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        programs = load_programs(args.programs)
    except (OSError, ValueError, KeyError) as exc:
        print(f"cannot read {args.programs}: {exc}", file=sys.stderr)
        return 2
    if args.only:
        programs = [p for p in programs if any(k in p.id for k in args.only)]
    mirrors = args.mirrors or default_mirrors()
    print(
        f"{'program':<10} {'outcome':<9} {'wall':>5} {'proof':>5} {'trigger':>7} "
        f"{'evals':>5} {'step':>5} "
        f"{'search':>9} {'random':>9}  reason",
        flush=True,
    )
    rows = []
    for program in programs:
        row = review(
            program,
            mirrors,
            timeout=args.timeout,
            search_seconds=args.search_seconds,
            baseline=not args.no_baseline,
        )
        rows.append(row)
        print(_row(row), flush=True)
    print()
    for line in summary(rows):
        print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps([asdict(r) for r in rows], indent=1, default=str), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
