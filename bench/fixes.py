"""The fix pass over `bench/cases/`: for every case the dynamic pass confirms, is a checked fix
found, of which kind, how far does it move the outputs on normal inputs, and how long does it
take; then every chosen fix is re-validated from scratch.

Per case, on a private copy of the case directory (the module `buggy`, as bench/dynamic.py
loads it): the static pass's finding on the marked line; the search on the case's configured
entry; the minimised trigger and its reproducer script (which must fail, as in the harness);
then the harness's own fix stage (`runners.harness.fix_finding`: candidates validated with the
reproducer run in a child Python against a patched copy, the search re-run with its budget,
the static re-scan, value equivalence on normal inputs, finite gradients). The chosen fix is
then re-validated from scratch: applied from its JSON record (as `numcheck review --fix` would
apply it) to a fresh copy, with a fresh import of the module, another seed for the search and
for the normal inputs, and every check run again.

    python -m bench.fixes                   # every case, 2 s search budget
    python -m bench.fixes -k p08 -k p10 --budget 3 --json bench/out/fixes.json

Targets (issue 4): a validated fix for every confirmed case; a fused stable API chosen wherever
one exists (a stable-API candidate was proposed); zero chosen fixes that fail re-validation.
Exit status 1 when a target is missed.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analyzers.dtypes import precision_failure
from bench.case_layout import bug_line, case_dirs, case_parser

MODULE = "buggy"
PATH = "buggy.py"


@dataclass
class Row:
    case: str
    framework: str
    op: str
    confirmed: bool = False
    status: str = "-"  # validated | none-validated | error | no-finding | not-confirmed
    kind: str | None = None
    name: str | None = None
    stable_proposed: bool = False  # a stable-API candidate was among the candidates
    candidates: list[str] = field(default_factory=list)
    max_abs: float | None = None
    max_rel: float | None = None
    normal_inputs: int = 0
    seconds: float | None = None  # the fix stage
    revalidated: bool | None = None
    revalidation_seconds: float | None = None
    note: str = ""
    replacement: str = ""
    # a trigger found in float16/bfloat16 and re-run in float32 (analyzers/dynamic/precision.py)
    precision: dict[str, str] | None = None

    @property
    def is_precision(self) -> bool:
        """Finite in float32 on the trigger that fails in the case's low precision."""
        return precision_failure({"precision": self.precision}) is not None


def _forget(repo: Path | None = None) -> None:
    """Cases share the module name `buggy`: forget the last one and its directory."""
    for name in [m for m in sys.modules if m == MODULE or m.startswith(MODULE + "__")]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if "numcheck-bench-fix-" not in p]


def _copy_case(case_dir: Path, into: Path) -> Path:
    shutil.copytree(case_dir, into, ignore=shutil.ignore_patterns("__pycache__", "fixed.py"))
    return into


def _entry(repo: Path, table: dict[str, Any], seed: int) -> Any:
    from analyzers.dynamic.entries import EntryConfig, build_configured

    _forget()
    target = table["target"].replace("buggy:", f"{MODULE}:", 1)
    return build_configured(
        repo,
        EntryConfig(
            target,
            tuple(table["inputs"]),
            dict(table.get("init", {})),
            table.get("dtype"),
            table.get("autocast"),
        ),
        seed,
    )


def _finding(repo: Path, line: int, op: str, dtype: str | None) -> dict[str, Any] | None:
    from analyzers.config import Config
    from analyzers.static import scan_source

    config = Config(dtype=dtype) if dtype in ("float16", "bfloat16", "float64") else None
    scan = scan_source((repo / PATH).read_text(encoding="utf-8"), PATH, config)
    on_line = [f for f in scan.findings if f.line <= line <= f.end_line]
    same_op = [f for f in on_line if f.op == op]
    chosen = same_op or on_line
    return chosen[0].to_json() if chosen else None


def _confirm(
    repo: Path, entry: Any, finding: dict[str, Any], op: str, line: int, seed: int, budget: float
) -> tuple[list[Any], str, dict[str, str] | None] | str:
    """(minimised trigger, reproducer, precision block) as the harness makes them, or why
    not."""
    from analyzers.dynamic.precision import mark_precision
    from analyzers.dynamic.reproducer import render
    from analyzers.dynamic.search import Budget, Searcher
    from analyzers.dynamic.writer import Target
    from runners.harness import _check_reproducer, minimised_trigger, shows_in_entry

    searcher = Searcher(
        entry,
        str(repo / PATH),
        frozenset({line}),
        op,
        dtype=entry.dtype,
        seed=seed,
        budget=Budget(seconds=budget),
        require_visible=shows_in_entry(entry),
    )
    outcome = searcher.run(entry.start)
    if not outcome.triggered:
        return f"search: not triggered ({outcome.error or 'budget spent'})"

    small, shows = minimised_trigger(entry, searcher, outcome)
    precision = mark_precision(entry, str(repo / PATH), frozenset({line}), op, small)
    target = Target(PATH, finding["line"], op, finding["call"], outcome.where or "forward", shows)
    script = render(entry, small, target, seed)
    fails, stderr = _check_reproducer(repo, script)
    if not fails:
        return f"the reproducer does not fail: {stderr.strip()[-200:]}"
    return small, script, precision


def _revalidate(
    case_dir: Path,
    table: dict[str, Any],
    finding: dict[str, Any],
    fix: dict[str, Any],
    trigger: list[Any],
    script: str,
    seed: int,
    budget: float,
) -> tuple[bool, str]:
    """The chosen fix applied from its record to a fresh copy and checked again, with a
    fresh import, another seed and other normal inputs."""
    from analyzers.dynamic.search import Budget
    from analyzers.fix.apply import apply_to_source
    from analyzers.fix.candidates import Candidate
    from analyzers.fix.entry_hooks import entry_hooks
    from analyzers.fix.patch import Patch
    from analyzers.fix.validate import validate
    from analyzers.model import Finding
    from analyzers.report.jsonout import finding_from_json
    from runners.harness import _run_reproducer, normal_inputs, scratch_copy

    with tempfile.TemporaryDirectory(prefix="numcheck-bench-fix-") as tmp:
        repo = _copy_case(case_dir, Path(tmp) / "case")
        source = (repo / PATH).read_text(encoding="utf-8")
        record: Finding = finding_from_json({**finding, "fix": fix})
        applied = apply_to_source(PATH, source, [record])
        if not applied.applied:
            return False, "the fix does not apply: " + "; ".join(w for _, w in applied.skipped)
        patch = Patch(
            **{
                k: fix[k]
                for k in (
                    "kind",
                    "name",
                    "description",
                    "path",
                    "diff",
                    "start_line",
                    "end_line",
                    "replacement",
                    "original",
                    "suggestion_complete",
                )
            },
            imports=tuple(fix.get("imports") or ()),
        )
        candidate = Candidate(
            fix["kind"],
            fix["name"],
            fix["description"],
            applied.after,
            patch,
            tuple(fix.get("watch") or ()),
        )
        entry = _entry(repo, table, seed + 1)
        scratch = scratch_copy(repo, Path(tmp) / "scratch")
        (scratch / PATH).write_text(applied.after, encoding="utf-8")

        def reproducer(file: Path) -> tuple[bool, str]:
            returncode, stderr = _run_reproducer(scratch, script)
            return returncode != 0, stderr

        directory = Path(tmp) / "patched"
        directory.mkdir()
        hooks = entry_hooks(
            candidate,
            entry,
            path=PATH,
            module_name=MODULE,
            trigger=trigger,
            normal_inputs=normal_inputs(entry, seed + 7),
            directory=directory,
            budget=Budget(seconds=budget),
            seed=seed + 1,
            dtype=entry.dtype,
            reproducer=reproducer,
            original_source=source,
        )
        result = validate(candidate, hooks, op=finding["op"], dtype=entry.dtype)
        return result.accepted, result.rejected_because or ""


def run_case(case_dir: Path, budget: float, seed: int, revalidate: bool = True) -> Row:
    from analyzers.fix import FixRequest, candidates
    from runners.harness import fix_finding

    meta = tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))
    line, op = bug_line(case_dir / "buggy.py")
    table = meta["entry"]
    row = Row(case_dir.name, meta.get("framework", "torch"), op)
    with tempfile.TemporaryDirectory(prefix="numcheck-bench-fix-") as tmp:
        repo = _copy_case(case_dir, Path(tmp) / "case")
        finding = _finding(repo, line, op, table.get("dtype"))
        if finding is None:
            row.status, row.note = "no-finding", "the static pass does not flag the marked line"
            return row
        row.op = finding["op"]
        entry = _entry(repo, table, seed)
        confirmed = _confirm(repo, entry, finding, finding["op"], line, seed, budget)
        if isinstance(confirmed, str):
            row.status, row.note = "not-confirmed", confirmed
            return row
        row.confirmed = True
        trigger, script, row.precision = confirmed
        source = (repo / PATH).read_text(encoding="utf-8")
        proposed = candidates(source, FixRequest.from_finding(finding))
        row.candidates = [f"{c.kind}:{c.name}" for c in proposed]
        row.stable_proposed = any(c.kind == "stable-api" for c in proposed)
        started = time.perf_counter()
        fix = fix_finding(
            repo,
            finding,
            entry,
            trigger,
            script,
            seed=seed,
            search_seconds=budget,
            dtype=entry.dtype,
        )
        row.seconds = time.perf_counter() - started
        row.status = fix["status"]
        row.normal_inputs = int(fix.get("normal_inputs", 0))
        if fix["status"] != "validated":
            row.note = "; ".join(
                f"{t.get('name')}: {t.get('rejected_because')}" for t in fix.get("tried", [])
            ) or str(fix.get("reason"))
            return row
        row.kind, row.name = fix["kind"], fix["name"]
        row.max_abs, row.max_rel = fix.get("max_abs_deviation"), fix.get("max_rel_deviation")
        row.replacement = str(fix.get("replacement", "")).strip()
        if row.stable_proposed and row.kind != "stable-api":
            lost = [r for r in fix.get("rejected", []) if r.get("kind") == "stable-api"]
            row.note = "stable API rejected: " + "; ".join(
                f"{r.get('name')}: {r.get('rejected_because')}" for r in lost
            )
    if revalidate:
        started = time.perf_counter()
        row.revalidated, why = _revalidate(
            case_dir, table, finding, fix, trigger, script, seed, budget
        )
        row.revalidation_seconds = time.perf_counter() - started
        if not row.revalidated:
            row.note = (row.note + "; " if row.note else "") + f"re-validation: {why}"
    return row


def _run_safely(case_dir: Path, budget: float, seed: int, revalidate: bool) -> Row:
    try:
        return run_case(case_dir, budget, seed, revalidate)
    except Exception as exc:  # one broken case must not hide the others' figures
        return Row(
            case_dir.name,
            "?",
            "?",
            status="crashed",
            note=f"{type(exc).__name__}: {str(exc)[:300]}",
        )
    finally:
        _forget()


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


HEADER = (
    f"{'case':38} {'op':7} {'fix':14} {'kind':10} {'name':16} {'max abs':>9} "
    f"{'max rel':>9} {'s':>6} {'re-val':6}"
)


# The fixes issue 17 asks of a precision finding: compute in float32, or a dtype-sized epsilon
PRECISION_FIX_KINDS = ("upcast", "epsilon")


def row_line(r: Row) -> str:
    reval = "-" if r.revalidated is None else ("ok" if r.revalidated else "FAIL")
    if r.precision is not None:
        reval += f" {r.precision['dtype']}/{r.precision['mode']}: f32 {r.precision['float32']}"
    return (
        f"{r.case:38} {r.op:7} {r.status:14} {r.kind or '-':10} {r.name or '-':16} "
        f"{_fmt(r.max_abs, '.2e'):>9} {_fmt(r.max_rel, '.2e'):>9} "
        f"{_fmt(r.seconds, '.2f'):>6} {reval:6} {' '.join(r.note.split())[:160]}"
    )


def report(rows: list[Row], budget: float) -> dict[str, Any]:
    """The totals and the targets (the rows are printed as they finish)."""
    confirmed = [r for r in rows if r.confirmed]
    validated = [r for r in confirmed if r.status == "validated"]
    stable = [r for r in confirmed if r.stable_proposed]
    stable_chosen = [r for r in stable if r.kind == "stable-api"]
    revalidated = [r for r in validated if r.revalidated is not None]
    failed_revalidation = [r for r in revalidated if not r.revalidated]
    kinds: dict[str, int] = {}
    for r in validated:
        kinds[r.kind or "?"] = kinds.get(r.kind or "?", 0) + 1
    seconds = sorted(r.seconds for r in confirmed if r.seconds is not None)
    precision = [r for r in confirmed if r.is_precision]
    precision_fixed = [
        r for r in precision if r.status == "validated" and r.kind in PRECISION_FIX_KINDS
    ]
    summary: dict[str, Any] = {
        "cases": len(rows),
        "confirmed": len(confirmed),
        "validated": len(validated),
        "kinds": kinds,
        "stable_proposed": len(stable),
        "stable_chosen": len(stable_chosen),
        "revalidated": len(revalidated),
        "failed_revalidation": len(failed_revalidation),
        "median_fix_seconds": seconds[len(seconds) // 2] if seconds else None,
        "total_fix_seconds": sum(seconds),
        "without_fix": [r.case for r in confirmed if r.status != "validated"],
        "stable_not_chosen": [r.case for r in stable if r.kind != "stable-api"],
        "not_confirmed": [r.case for r in rows if not r.confirmed],
        "budget_seconds": budget,
        "precision": [r.case for r in precision],
        "precision_fixed": [r.case for r in precision_fixed],
    }
    print()
    print(
        f"confirmed {len(confirmed)}/{len(rows)} cases (search budget {budget:g} s); "
        f"not confirmed: {', '.join(summary['not_confirmed']) or 'none'}"
    )
    print(
        f"validated fix: {len(validated)}/{len(confirmed)} confirmed cases (target: all); "
        f"by kind: {', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or '-'}"
    )
    if summary["without_fix"]:
        print(f"  without a validated fix: {', '.join(summary['without_fix'])}")
    print(
        f"fused stable API chosen: {len(stable_chosen)}/{len(stable)} confirmed cases with a "
        f"stable-API candidate (target: all)"
    )
    if summary["stable_not_chosen"]:
        print(f"  stable API proposed but not chosen: {', '.join(summary['stable_not_chosen'])}")
    print(
        f"re-validated from scratch: {len(revalidated) - len(failed_revalidation)}/"
        f"{len(revalidated)} pass (target: 0 failures)"
    )
    print(
        f"precision findings (the trigger is finite in float32): {len(precision)}, with a "
        f"validated {' or '.join(PRECISION_FIX_KINDS)} fix: {len(precision_fixed)} "
        f"(target: 3): {', '.join(summary['precision_fixed']) or '-'}"
    )
    if seconds:
        print(
            f"fix stage time per confirmed case: median {summary['median_fix_seconds']:.2f} s, "
            f"total {summary['total_fix_seconds']:.1f} s"
        )
    return summary


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = case_parser(
        "python -m bench.fixes",
        __doc__.split("\n\n")[0],
        2.0,
        "seconds per search, and per re-run of the search on a patched copy",
    )
    parser.add_argument(
        "--no-revalidate",
        action="store_true",
        help="skip the from-scratch re-validation of the chosen fixes",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dirs = case_dirs(args.cases, args.k)
    if not dirs:
        print(f"no cases under {args.cases}", file=sys.stderr)
        return 2
    rows = []
    print(HEADER, flush=True)
    for case_dir in dirs:
        rows.append(_run_safely(case_dir, args.budget, args.seed, not args.no_revalidate))
        print(row_line(rows[-1]), flush=True)
    summary = report(rows, args.budget)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {"summary": summary, "rows": [asdict(r) for r in rows]}, indent=2, default=str
            ),
            encoding="utf-8",
        )
    missed = (
        summary["without_fix"] or summary["stable_not_chosen"] or summary["failed_revalidation"]
    )
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
