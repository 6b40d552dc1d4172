"""Speed and noise of the static pass on a large real codebase (the installed torch package).

Run from the repository root::

    python -m bench.static_torch                       # torch, sample every 10th file, 3 reps
    python -m bench.static_torch --root some/dir --sample-every 1 --json /tmp/out.json

Two questions, answered in one run so that both numbers share a machine and a load:

* How fast is numcheck's static pass (``ast`` prefilter, libcst on candidate functions only)
  compared with the naive approach it replaces (libcst ``parse_module`` plus position
  metadata for every node of every file)? The naive pass is ~25x slower, so it runs on a
  deterministic sample (every Nth file by sorted path) and numcheck is timed on that same
  sample too; that sample-vs-sample ratio is the headline. The target is 4x.
* How noisy is it? Findings per 1,000 lines, by op and by rule, plus a seeded random sample
  of findings printed with source context so that a person can classify them by hand.

Sources are read into memory before any timing, so disk I/O is excluded.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = REPO_ROOT / "bench" / "out" / "static_torch.json"
TARGET_RATIO = 4.0


@dataclass(frozen=True)
class Source:
    """One corpus file, already decoded: the timed phases must not touch the disk."""

    path: str  # relative to the corpus root, '/'-separated
    text: str
    lines: int


@dataclass
class Corpus:
    root: Path
    files: list[Source] = field(default_factory=list)
    not_utf8: list[str] = field(default_factory=list)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)


@dataclass
class Timing:
    """Wall time of one phase; `runs` keeps every repetition so the spread is visible."""

    files: int
    lines: int
    runs: list[float]

    @property
    def seconds(self) -> float:
        return statistics.median(self.runs)

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else float("inf")

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "lines": self.lines,
            "runs_s": self.runs,
            "median_s": self.seconds,
            "lines_per_s": self.lines_per_second,
        }


def count_lines(text: str) -> int:
    """Same rule as `FileScan.lines`, so both passes are charged for the same lines."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def torch_root() -> Path:
    """The installed torch package directory, found without importing torch (slow, ~1 s)."""
    spec = importlib.util.find_spec("torch")
    if spec is None:
        raise SystemExit("torch is not installed; pass --root DIR to benchmark another tree")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin).parent
    raise SystemExit("cannot locate the torch package; pass --root DIR")


def load_corpus(root: Path) -> Corpus:
    """Every *.py under `root`, sorted by path; non-UTF-8 files are counted and skipped."""
    corpus = Corpus(root)
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            corpus.not_utf8.append(rel)
            continue
        corpus.files.append(Source(rel, text, count_lines(text)))
    return corpus


def sample_files(files: Sequence[Source], every: int) -> list[Source]:
    """Every Nth file by sorted path: deterministic, and spread over the whole tree."""
    return list(files[:: max(1, every)])


@dataclass
class NumcheckRun:
    """One timed pass: `scans` holds a FileScan per file that did not crash the analyser."""

    seconds: float
    scans: list[Any]
    per_file: list[float]
    crashes: list[dict[str, str]]


def run_numcheck(files: Sequence[Source]) -> NumcheckRun:
    """numcheck's static pass over `files`.

    `scan_source` promises never to raise; when it does anyway, the file is recorded as a
    crash and the run goes on, so one analyser bug costs one file, not the whole benchmark.
    """
    from analyzers.static import scan_source

    scans: list[Any] = []
    per_file: list[float] = []
    crashes: list[dict[str, str]] = []
    clock = time.perf_counter
    start = clock()
    for src in files:
        t0 = clock()
        try:
            scans.append(scan_source(src.text, src.path))
        except Exception as exc:  # a benchmark must survive analyser bugs
            crashes.append({"path": src.path, "error": f"{type(exc).__name__}: {exc}"})
        per_file.append(clock() - t0)
    return NumcheckRun(clock() - start, scans, per_file, crashes)


def run_naive(files: Sequence[Source]) -> tuple[float, int]:
    """(seconds, files libcst rejected): parse every file whole and resolve every position."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    errors = 0
    start = time.perf_counter()
    for src in files:
        try:
            module = cst.parse_module(src.text)
            MetadataWrapper(module).resolve(PositionProvider)
        except (cst.ParserSyntaxError, RecursionError):
            errors += 1
    return time.perf_counter() - start, errors


def timed(repeat: int, phase: Callable[[], float]) -> list[float]:
    """Run `phase` `repeat` times with a collection before each, so garbage from the previous
    phase is not charged to this one."""
    runs: list[float] = []
    for _ in range(max(1, repeat)):
        gc.collect()
        runs.append(phase())
    return runs


def distribution(counter: Counter[str]) -> list[dict[str, Any]]:
    total = sum(counter.values()) or 1
    return [
        {"name": name, "count": n, "pct": 100.0 * n / total}
        for name, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _ratio(fast: Timing, slow: Timing) -> float:
    """Speed-up in lines/s; 0.0 when the baseline was too quick to time at all."""
    slow_rate = slow.lines_per_second
    return fast.lines_per_second / slow_rate if 0 < slow_rate < float("inf") else 0.0


def context_lines(text: str, line: int, around: int) -> list[tuple[int, str]]:
    lines = text.splitlines()
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return [(n, lines[n - 1]) for n in range(lo, hi + 1)]


def benchmark(
    corpus: Corpus,
    sample_every: int,
    repeat: int,
    repeat_baseline: int,
    findings_sample: int,
    seed: int,
    context: int,
) -> dict[str, Any]:
    """All measurements as one JSON-able dict (printing is separate so tests can use this)."""
    sample = sample_files(corpus.files, sample_every)

    first: list[NumcheckRun] = []

    def whole() -> float:
        run = run_numcheck(corpus.files)
        if not first:
            first.append(run)  # findings and per-file times come from the first run
        return run.seconds

    whole_runs = timed(repeat, whole)
    sample_runs = timed(repeat, lambda: run_numcheck(sample).seconds)
    naive_errors = 0

    def naive() -> float:
        nonlocal naive_errors
        seconds, naive_errors = run_naive(sample)
        return seconds

    naive_runs = timed(repeat_baseline, naive)
    gc.collect()

    whole_t = Timing(len(corpus.files), corpus.lines, whole_runs)
    sample_lines = sum(f.lines for f in sample)
    sample_t = Timing(len(sample), sample_lines, sample_runs)
    naive_t = Timing(len(sample), sample_lines, naive_runs)

    whole_scans = first[0].scans
    findings = [f for scan in whole_scans for f in scan.findings]
    findings.sort(key=lambda f: (f.path, f.line, f.column, f.op))
    errors = [{"path": s.path, "error": s.error} for s in whole_scans if s.error]
    by_op = Counter(f.op for f in findings)
    by_rule = Counter(f.rule for f in findings)
    by_severity = Counter(f.severity for f in findings)
    texts = {f.path: f.text for f in corpus.files}
    rng = random.Random(seed)
    picked = rng.sample(findings, min(max(0, findings_sample), len(findings)))
    slowest = sorted(zip(first[0].per_file, corpus.files, strict=True), key=lambda p: -p[0])[:10]

    return {
        "root": str(corpus.root),
        "python": sys.version.split()[0],
        "files": len(corpus.files),
        "lines": corpus.lines,
        "not_utf8": corpus.not_utf8,
        "sample_every": max(1, sample_every),
        "repeat": max(1, repeat),
        "repeat_baseline": max(1, repeat_baseline),
        "numcheck_whole": whole_t.to_json(),
        "numcheck_sample": sample_t.to_json(),
        "naive_sample": naive_t.to_json(),
        "naive_parse_errors": naive_errors,
        "ratio_sample": _ratio(sample_t, naive_t),
        "ratio_whole_vs_sample_naive": _ratio(whole_t, naive_t),
        "target_ratio": TARGET_RATIO,
        "units": sum(s.units for s in whole_scans),
        "suppressed": sum(s.suppressed for s in whole_scans),
        "parse_errors": len(errors),
        "errors": errors,
        "crashes": first[0].crashes,
        "findings_total": len(findings),
        "findings_per_kloc": 1000.0 * len(findings) / corpus.lines if corpus.lines else 0.0,
        "files_with_findings": len({f.path for f in findings}),
        "by_op": distribution(by_op),
        "by_rule": distribution(by_rule),
        "by_severity": distribution(by_severity),
        "by_op_rule": distribution(Counter(f"{f.op}/{f.rule}" for f in findings)),
        "slowest_files": [{"path": s.path, "lines": s.lines, "seconds": t} for t, s in slowest],
        "seed": seed,
        "sample": [
            {
                "path": f.path,
                "line": f.line,
                "column": f.column,
                "function": f.function,
                "op": f.op,
                "rule": f.rule,
                "severity": f.severity,
                "call": f.call,
                "operand": f.operand,
                "why": f.why,
                "context": [[n, text] for n, text in context_lines(texts[f.path], f.line, context)],
            }
            for f in picked
        ],
        "findings": [
            {"path": f.path, "line": f.line, "op": f.op, "rule": f.rule, "call": f.call}
            for f in findings
        ],
    }


def _table(rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for k, row in enumerate(rows):
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def render(result: dict[str, Any]) -> str:
    """The human-readable report."""
    out: list[str] = [
        f"corpus: {result['root']}  (python {result['python']})",
        f"files: {result['files']:,}  lines: {result['lines']:,}  "
        f"not UTF-8 (skipped): {len(result['not_utf8'])}",
        "",
    ]
    rows = [["pass", "files", "lines", "seconds (median)", "lines/s"]]
    for label, key in (
        ("numcheck, whole corpus", "numcheck_whole"),
        (f"numcheck, sample 1/{result['sample_every']}", "numcheck_sample"),
        (f"naive libcst, sample 1/{result['sample_every']}", "naive_sample"),
    ):
        t = result[key]
        runs = "/".join(f"{r:.2f}" for r in t["runs_s"])
        rows.append(
            [
                label,
                f"{t['files']:,}",
                f"{t['lines']:,}",
                f"{t['median_s']:.2f} ({runs})",
                f"{t['lines_per_s']:,.0f}",
            ]
        )
    out += _table(rows, {1, 2, 3, 4})
    target = result["target_ratio"]
    ratio = result["ratio_sample"]
    verdict = "meets" if ratio >= target else "MISSES"
    out += [
        "",
        f"numcheck / naive = {ratio:.1f}x   (same sample; target {target:.0f}x: {verdict})",
        f"numcheck whole corpus / naive sample = "
        f"{result['ratio_whole_vs_sample_naive']:.1f}x   (secondary)",
        "",
        f"findings: {result['findings_total']:,} in {result['files_with_findings']:,} files"
        f" = {result['findings_per_kloc']:.2f} per 1,000 lines   "
        f"(units analysed: {result['units']:,}, suppressed: {result['suppressed']})",
        f"files numcheck did not analyse (parse error, too large): {result['parse_errors']}   "
        f"(naive libcst on the sample: {result['naive_parse_errors']})",
    ]
    for err in result["errors"][:10]:
        out.append(f"  {err['error']}")
    if result["crashes"]:
        out.append(
            f"ANALYSER CRASHES (scan_source raised; files skipped): {len(result['crashes'])}"
        )
        out += [f"  {c['path']}: {c['error']}" for c in result["crashes"][:10]]
    for title, key in (("by op", "by_op"), ("by rule", "by_rule"), ("by severity", "by_severity")):
        out += ["", title]
        rows = [["name", "count", "%"]]
        rows += [[d["name"], f"{d['count']:,}", f"{d['pct']:.1f}"] for d in result[key]]
        out += ["  " + line for line in _table(rows, {1, 2})]
    out += ["", "slowest files (numcheck, first run)"]
    out += [
        f"  {s['seconds'] * 1000:8.1f} ms  {s['lines']:>6,} lines  {s['path']}"
        for s in result["slowest_files"]
    ]
    if result["sample"]:
        out += ["", f"random sample of {len(result['sample'])} findings (seed {result['seed']})"]
    for i, f in enumerate(result["sample"], 1):
        out += [
            "",
            f"[{i}] {f['path']}:{f['line']}  op={f['op']}  rule={f['rule']}  "
            f"in {f['function'] or '<module>'}",
            f"    call: {' '.join(f['call'].split())}",
            f"    why:  {f['why']}",
        ]
        for n, text in f["context"]:
            mark = ">" if n == f["line"] else " "
            out.append(f"  {mark}{n:6d} | {text}")
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.static_torch",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--root", type=Path, help="tree to scan (default: installed torch)")
    parser.add_argument(
        "--sample-every",
        type=int,
        default=10,
        metavar="N",
        help="naive baseline on every Nth file by sorted path (default 10)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        metavar="R",
        help="numcheck timing repetitions; the median is reported (default 3)",
    )
    parser.add_argument(
        "--repeat-baseline",
        type=int,
        default=1,
        metavar="R",
        help="naive baseline repetitions (default 1)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=DEFAULT_JSON,
        metavar="FILE",
        help="write metrics, the sample and all findings here "
        "(default bench/out/static_torch.json)",
    )
    parser.add_argument(
        "--findings-sample",
        type=int,
        default=30,
        metavar="K",
        help="print K random findings with context (default 30)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for the sample (default 0)")
    parser.add_argument(
        "--context",
        type=int,
        default=3,
        metavar="C",
        help="source lines shown either side of a sampled finding (default 3)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    root = (args.root or torch_root()).resolve()
    if not root.is_dir():
        print(f"error: {root} is not a directory", file=sys.stderr)
        return 2
    corpus = load_corpus(root)
    if not corpus.files:
        print(f"error: no readable *.py files under {root}", file=sys.stderr)
        return 2
    result = benchmark(
        corpus,
        args.sample_every,
        args.repeat,
        args.repeat_baseline,
        args.findings_sample,
        args.seed,
        args.context,
    )
    print(render(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
