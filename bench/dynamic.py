"""How fast the dynamic pass proves the bugs of `bench/cases/`, against two baselines.

For every case: numcheck's search on the buggy program (time to trigger, the stage that got
there), the same on the fixed twin (which must stay silent), and two baselines with the same
time budget, run in the same process:

* ordinary inputs: the entry run on inputs like a training run feeds it (standard normal
  values clipped to the box, ints and bools uniform), over and over;
* random sampling: uniform draws from the same box (RANUM without its gradient stage).

    python -m bench.dynamic                 # every case, 10 s budget each
    python -m bench.dynamic -k p08 --budget 3 --json bench/out/dynamic.json

    python -m bench.dynamic --device cuda   # torch entries on the GPU (TF stays on the CPU)

Prints per-case rows (seconds and evaluations to trigger for numcheck and both baselines), then
the speed-up over random sampling on the cases random sampling also solves, three ways: the
median of per-case ratios, the ratio of summed times (and of summed evaluations), and the same
restricted to the cases random sampling needs more than a handful of draws for (on the others
random sampling triggers on its first draws, and a per-case ratio of two times of a few
milliseconds is noise). It says whether the 10x target holds on each. The ratios are the
figures to quote: these machines are noisy. Times are medians of `--repeat` runs of the search
and of random sampling, interleaved in alternating order, so that the one-off costs of a
process (the first backward pass through a failing op) fall on neither side alone.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from analyzers.dynamic.entries import EntryConfig, EntryError, build_configured
from analyzers.dynamic.search import Budget, Searcher
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.tensors import TORCH_DTYPES, sample
from bench.case_layout import CASES_DIR, bug_line, case_dirs, case_parser

HANDFUL = 5  # random draws: above this, a case is one random sampling has to work for
TARGET = 10.0  # the speed-up over random sampling the issue asks for


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
    ordinary_evaluations: int = 0  # draws made (until the trigger, or in the whole budget)
    random_evaluations: int = 0
    device: str = "cpu"


def _entry(
    case_dir: Path, module: str, table: dict[str, Any], seed: int, device: str = "cpu"
) -> Any:
    target = table["target"].replace("buggy:", f"{module}:", 1)
    return build_configured(
        case_dir,
        EntryConfig(
            target, tuple(table["inputs"]), dict(table.get("init", {})), table.get("dtype")
        ),
        seed,
        device=device,
    )


def _fresh_import(module: str) -> None:
    """buggy.py and fixed.py of different cases share names: forget the last case's module
    and its directory on sys.path, so the next import finds this case's file."""
    sys.modules.pop(module, None)
    cases = str(CASES_DIR.resolve())
    sys.path[:] = [p for p in sys.path if not p.startswith(cases)]


def _search(
    case_dir: Path,
    module: str,
    table: dict[str, Any],
    lines: frozenset[int],
    op: str,
    budget: float,
    seed: int,
    device: str = "cpu",
) -> tuple[Any, Any]:
    searcher = _warm_searcher(case_dir, module, table, lines, op, budget, seed, device)
    return searcher, searcher.run()


def _warm_searcher(
    case_dir: Path,
    module: str,
    table: dict[str, Any],
    lines: frozenset[int],
    op: str,
    budget: float,
    seed: int,
    device: str = "cpu",
) -> Searcher:
    _fresh_import(module)
    entry = _entry(case_dir, module, table, seed, device)
    searcher = Searcher(
        entry,
        str(case_dir / f"{module}.py"),
        lines,
        op,
        dtype=table.get("dtype") or "float32",
        seed=seed,
        budget=Budget(seconds=budget, evaluations=10**9),
    )
    # one untimed run first, so that neither numcheck (timed first) nor the baselines pay
    # for the first call's one-off costs (kernel caches, lazy imports); its own draw, its
    # count forgotten: the search's draws and outcome are unchanged
    warm = torch.Generator().manual_seed(seed + 2)
    searcher.evaluate([sample(spec, warm) for spec in entry.specs])
    searcher.count = 0
    return searcher


def _ordinary(spec: InputSpec, generator: torch.Generator) -> torch.Tensor:
    if not spec.is_float:
        return sample(spec, generator)
    values = torch.randn(spec.shape, generator=generator, dtype=torch.float64)
    return values.clamp(spec.lo, spec.hi).to(TORCH_DTYPES[spec.dtype])


def _baseline(searcher: Searcher, kind: str, budget: float, seed: int) -> tuple[float | None, int]:
    """Seconds until a plain draw triggers the op (None within the budget), and the draws
    made."""
    generator = torch.Generator().manual_seed(seed + 1)
    started = time.perf_counter()
    draws = 0
    while time.perf_counter() - started < budget:
        draw = _ordinary if kind == "ordinary" else sample
        inputs = [draw(spec, generator) for spec in searcher.entry.specs]
        draws += 1
        evaluation = searcher.evaluate(inputs)
        if evaluation.forward or evaluation.backward:
            return time.perf_counter() - started, draws
    return None, draws


def _repeated(
    case_dir: Path,
    table: dict[str, Any],
    lines: frozenset[int],
    op: str,
    budget: float,
    seed: int,
    device: str,
    repeat: int,
    row: Row,
) -> tuple[float | None, float | None]:
    """Median seconds of `repeat` runs of the search and of random sampling, interleaved and
    in alternating order (search first, then random sampling first, ...), so that neither
    pays more of the process's one-off costs (the first backward pass through a failing op,
    lazy kernels) than the other. Random sampling is repeated only where it triggered: its
    draws are seeded, a run that found nothing would find nothing again. The evaluation
    counts are the same every time (both are deterministic under the seed)."""
    searched = [row.seconds or 0.0]
    sampled = [row.random_seconds] if row.random_seconds is not None else []
    for round_ in range(1, repeat):
        searcher = _warm_searcher(case_dir, "buggy", table, lines, op, budget, seed, device)
        if sampled and round_ % 2 == 1:
            sampled.append(_baseline(searcher, "random", budget, seed)[0] or 0.0)
        outcome = searcher.run()
        searched.append(outcome.seconds if outcome.triggered else row.seconds or 0.0)
        if sampled and round_ % 2 == 0:
            sampled.append(_baseline(searcher, "random", budget, seed)[0] or 0.0)
    return statistics.median(searched), statistics.median(sampled) if sampled else None


def run_case(case_dir: Path, budget: float, seed: int, device: str = "cpu", repeat: int = 1) -> Row:
    meta = tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))
    line, op = bug_line(case_dir / "buggy.py")
    framework = meta.get("framework", "torch")
    row = Row(
        case_dir.name,
        framework,
        op,
        meta.get("failure", "?"),
        None,
        None,
        None,
        None,
        0,
        None,
        None,
        None,
    )
    table = meta["entry"]
    try:
        searcher, outcome = _search(
            case_dir, "buggy", table, frozenset({line}), op, budget, seed, device
        )
    except EntryError as exc:
        row.note = f"entry: {exc}"
        return row
    row.device = searcher.entry.device
    row.confirmed = outcome.triggered
    row.seconds = outcome.seconds if outcome.triggered else None
    row.stage, row.where, row.evaluations = outcome.stage, outcome.where, outcome.evaluations
    if outcome.error and not outcome.reached:
        row.note = outcome.error
    row.ordinary_seconds, row.ordinary_evaluations = _baseline(searcher, "ordinary", budget, seed)
    row.random_seconds, row.random_evaluations = _baseline(searcher, "random", budget, seed)
    if repeat > 1 and outcome.triggered:
        row.seconds, row.random_seconds = _repeated(
            case_dir, table, frozenset({line}), op, budget, seed, device, repeat, row
        )
    fixed_lines = frozenset(
        range(1, 1 + len((case_dir / "fixed.py").read_text(encoding="utf-8").splitlines()))
    )
    _, fixed = _search(case_dir, "fixed", table, fixed_lines, op, budget, seed, device)
    row.fixed_confirmed = fixed.triggered
    return row


def _run_safely(
    case_dir: Path, budget: float, seed: int, device: str = "cpu", repeat: int = 1
) -> Row:
    try:
        return run_case(case_dir, budget, seed, device, repeat)
    except Exception as exc:  # one broken case must not hide the others' figures
        return Row(
            case_dir.name,
            "?",
            "?",
            "?",
            False,
            None,
            None,
            None,
            0,
            None,
            None,
            None,
            note=f"crashed: {type(exc).__name__}: {exc}",
        )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / max(denominator, 1e-6)


def _speedups(rows: list[Row]) -> dict[str, Any]:
    """numcheck against random sampling on `rows` (cases both solve): per-case time ratios,
    their median, and the ratios of summed times and summed evaluations."""
    if not rows:
        return {"cases": 0}
    time_ratios = [_ratio(r.random_seconds or 0.0, r.seconds or 0.0) for r in rows]
    eval_ratios = [_ratio(r.random_evaluations, r.evaluations) for r in rows]
    numcheck_s = sum(r.seconds or 0.0 for r in rows)
    random_s = sum(r.random_seconds or 0.0 for r in rows)
    return {
        "cases": len(rows),
        "median_time_ratio": statistics.median(time_ratios),
        "median_evaluations_ratio": statistics.median(eval_ratios),
        "numcheck_seconds_sum": numcheck_s,
        "random_seconds_sum": random_s,
        "summed_time_ratio": _ratio(random_s, numcheck_s),
        "numcheck_evaluations_sum": sum(r.evaluations for r in rows),
        "random_evaluations_sum": sum(r.random_evaluations for r in rows),
        "summed_evaluations_ratio": _ratio(
            sum(r.random_evaluations for r in rows), sum(r.evaluations for r in rows)
        ),
    }


def _verdict(value: float) -> str:
    return f"{value:.1f}x ({'meets' if value >= TARGET else 'BELOW'} the {TARGET:g}x target)"


def report(rows: list[Row], budget: float, device: str = "cpu") -> dict[str, Any]:
    print(
        f"{'case':34} {'op':8} {'fail':8} {'found':5} {'s':>7} {'evals':>6} {'stage':9} "
        f"{'ordinary s':>10} {'random s':>9} {'r.evals':>7} {'fixed':5}"
    )
    for r in rows:
        found = "-" if r.confirmed is None else ("yes" if r.confirmed else "NO")
        fixed = "-" if r.fixed_confirmed is None else ("NAN!" if r.fixed_confirmed else "ok")
        random_evals = (
            str(r.random_evaluations)
            if r.random_seconds is not None
            else f">{r.random_evaluations}"
        )
        print(
            f"{r.case:34} {r.op:8} {r.failure:8} {found:5} {_fmt(r.seconds):>7} "
            f"{r.evaluations if r.confirmed else '-':>6} {r.stage or '-':9} "
            f"{_fmt(r.ordinary_seconds):>10} {_fmt(r.random_seconds):>9} "
            f"{random_evals:>7} {fixed:5} {r.note}"
        )
    ran = [r for r in rows if r.confirmed is not None]
    confirmed = [r for r in ran if r.confirmed]
    times = [r.seconds for r in confirmed if r.seconds is not None]
    evaluations = [r.evaluations for r in confirmed]
    both = [r for r in confirmed if r.random_seconds is not None and r.seconds is not None]
    hard = [r for r in both if r.random_evaluations > HANDFUL]
    only_numcheck = [r for r in confirmed if r.random_seconds is None]
    overall, on_hard = _speedups(both), _speedups(hard)
    devices = sorted({r.device for r in ran})
    summary = {
        "cases": len(rows),
        "run": len(ran),
        "confirmed": len(confirmed),
        "device": device,
        "devices_used": devices,
        "median_seconds_to_trigger": statistics.median(times) if times else None,
        "median_evaluations_to_trigger": statistics.median(evaluations) if evaluations else None,
        "ordinary_solved": sum(r.ordinary_seconds is not None for r in ran),
        "random_solved": sum(r.random_seconds is not None for r in ran),
        "speedup_vs_random": overall,
        "speedup_vs_random_beyond_a_handful": {**on_hard, "draws_above": HANDFUL},
        "median_speedup_vs_random": overall.get("median_time_ratio"),
        "solved_only_by_numcheck": [r.case for r in only_numcheck],
        "fixed_twins_confirmed": sum(bool(r.fixed_confirmed) for r in ran),
        "not_run": [r.case for r in rows if r.confirmed is None],
        "budget_seconds": budget,
    }
    print()
    print(
        f"device: {device} (entries ran on: {', '.join(devices) or '-'}; TensorFlow entries "
        f"always on the CPU)"
    )
    print(
        f"confirmed {len(confirmed)}/{len(ran)} cases run ({len(rows) - len(ran)} not run: "
        f"no entry); budget {budget:g} s per search"
    )
    if times:
        print(
            f"median time to trigger: {statistics.median(times):.3f} s, median evaluations "
            f"{statistics.median(evaluations):g} (target < 1 s on the CPU)"
        )
    print(
        f"ordinary inputs triggered {summary['ordinary_solved']}/{len(ran)}; random sampling "
        f"{summary['random_solved']}/{len(ran)}; {len(only_numcheck)} confirmed cases are "
        f"out of random sampling's reach within {budget:g} s"
    )
    for label, stats in (
        ("cases random sampling also solves", overall),
        (f"cases random sampling needs more than {HANDFUL} draws for", on_hard),
    ):
        if not stats["cases"]:
            print(f"speed-up over random sampling on {label}: no such case")
            continue
        print(f"speed-up over random sampling on the {stats['cases']} {label}:")
        print(
            f"  summed time     {stats['random_seconds_sum']:.3f} s / "
            f"{stats['numcheck_seconds_sum']:.3f} s = "
            f"{_verdict(stats['summed_time_ratio'])}"
        )
        print(
            f"  summed evals    {stats['random_evaluations_sum']} / "
            f"{stats['numcheck_evaluations_sum']} = "
            f"{_verdict(stats['summed_evaluations_ratio'])}"
        )
        print(
            f"  median per case {_verdict(stats['median_time_ratio'])} in time, "
            f"{stats['median_evaluations_ratio']:.1f}x in evaluations"
        )
    print(f"fixed twins confirmed (must be 0): {summary['fixed_twins_confirmed']}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = case_parser(
        "python -m bench.dynamic",
        __doc__.split("\n\n")[0],
        10.0,
        "seconds per search and per baseline",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="timed runs per case of the search and of random sampling, "
        "interleaved in alternating order; medians reported (default 3)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where torch entries run (TensorFlow entries stay on the CPU)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dirs = case_dirs(args.cases, args.k)
    if not dirs:
        print(f"no cases under {args.cases}", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: torch sees no CUDA device", file=sys.stderr)
        return 2
    rows = [_run_safely(d, args.budget, args.seed, args.device, max(1, args.repeat)) for d in dirs]
    summary = report(rows, args.budget, args.device)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"summary": summary, "rows": [asdict(r) for r in rows]}, indent=2),
            encoding="utf-8",
        )
    failed = summary["confirmed"] < summary["run"] or summary["fixed_twins_confirmed"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
