"""Sandbox overhead per job: `LocalRunner` from start to result, against the same harness work
done in this process, and against a plain child process without any hardening.

    .venv/bin/python -m bench.sandbox [--repeat 7] [--json bench/out/sandbox.json]

The job is one finding of the harness fixture (`log(softmax(x))`, confirmed in the first
restarts), with harvesting and the fix stage off, so the figure is the cost of the sandbox
and not of the search. Three ways, each repeated, medians reported:

- in-process: `runners.harness.confirm()` on the finding in this process (torch already
  imported after the warm-up: the floor);
- plain child: the harness's worker alone (`python -m runners.harness --worker`) in a
  subprocess, job on stdin, no supervisor, no namespaces, no rlimits, no user switch (what
  any out-of-process design pays: a Python start and the torch import);
- local runner: `LocalRunner().run()` with everything this machine allows (the isolation it
  got is printed).

Printed: the medians and two ratios of medians, local/in-process and local/plain child (the
part the hardening itself adds: the jail, and the supervisor process in front of the worker).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "dynamic" / "harness_repo"


def make_job(repo: Path) -> dict[str, Any]:
    from analyzers.static import scan_source

    path = "hpkg/models.py"
    scan = scan_source((repo / path).read_text(encoding="utf-8"), path)
    finding = next(f.to_json() for f in scan.findings if f.function == "log_of_softmax")
    return {
        "repo": str(repo),
        "findings": [finding],
        "entries": [],
        "seed": 0,
        "search_seconds": 2.0,
        "finding_timeout": 60.0,
        "harvest": False,
        "fix": False,
    }


def in_process(job: dict[str, Any]) -> float:
    from runners.harness import confirm

    started = time.perf_counter()
    cwd = os.getcwd()
    os.chdir(job["repo"])
    try:
        for finding in job["findings"]:
            record = confirm(job, finding, None)
            assert record["status"] == "confirmed", record
    finally:
        os.chdir(cwd)
    return time.perf_counter() - started


def plain_child(job: dict[str, Any]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "runners.harness", "--worker"],
        cwd=job["repo"],
        input=json.dumps(job).encode(),
        capture_output=True,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )
    seconds = time.perf_counter() - started
    assert proc.returncode == 0 and b'"confirmed"' in proc.stdout, proc.stderr[-2000:]
    return seconds


def local_runner(job: dict[str, Any], runner: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = runner.run(job, timeout=120)
    seconds = time.perf_counter() - started
    assert result.outcome == "ok" and result.records[0]["status"] == "confirmed", result
    return seconds, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sandbox",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeat", type=int, default=7, help="timed runs of each way")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "sandbox.json")
    args = parser.parse_args(argv)

    from runners.local import LocalRunner

    runner = LocalRunner()
    times: dict[str, list[float]] = {"in_process": [], "plain_child": [], "local_runner": []}
    with tempfile.TemporaryDirectory(prefix="numcheck-bench-sandbox-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
        job = make_job(repo)
        in_process(job)  # warm-up: torch and the fixture imported once, as a worker would
        isolation: dict[str, Any] = {}
        for _ in range(args.repeat):  # interleaved, so drift hits all three alike
            times["in_process"].append(in_process(job))
            times["plain_child"].append(plain_child(job))
            seconds, result = local_runner(job, runner)
            times["local_runner"].append(seconds)
            isolation = result.isolation
    medians = {k: statistics.median(v) for k, v in times.items()}
    ratios = {
        "local_over_in_process": medians["local_runner"] / medians["in_process"],
        "local_over_plain_child": medians["local_runner"] / medians["plain_child"],
    }
    print(f"sandbox overhead per job, median of {args.repeat} (one confirmed finding)")
    for name, value in medians.items():
        print(f"  {name:<13} {value * 1000:8.0f} ms")
    print(
        f"  local runner / in-process:  {ratios['local_over_in_process']:.1f}x "
        f"(+{(medians['local_runner'] - medians['in_process']) * 1000:.0f} ms)"
    )
    print(
        f"  local runner / plain child: {ratios['local_over_plain_child']:.2f}x "
        f"(+{(medians['local_runner'] - medians['plain_child']) * 1000:.0f} ms: the hardening)"
    )
    enforced = {k: v for k, v in isolation.items() if k not in ("warnings", "rlimits")}
    print(f"  isolation: {enforced}")
    for warning in isolation.get("warnings", []):
        print(f"  warning: {warning}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {"times": times, "medians": medians, "ratios": ratios, "isolation": isolation}, indent=2
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
