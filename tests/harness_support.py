"""Shared by the tests that run the real harness (`LocalRunner`) over a small repository
written to a temporary folder (recorded module methods, Keras layers, weight ranges): writing
the repository, scanning it and running every finding, finding a record, and running a
reproducer in a plain `python` child with the repository on its path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzers.static import scan_source
from runners.local import LocalRunner, RunResult
from runners.trusted import written_reproducer


def write_repo(repo: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    return repo


@dataclass
class Run:
    repo: Path
    result: RunResult
    fingerprints: dict[str, str]  # function -> its finding's fingerprint

    def record(self, function: str, stage: str | None = None) -> dict[str, Any]:
        """The finding's record of the dynamic pass (`stage=None`), or of the fix stage."""
        (found,) = [
            r
            for r in self.result.records
            if r["fingerprint"] == self.fingerprints[function] and r.get("stage") == stage
        ]
        return found


def run_findings(
    repo: Path,
    path: str,
    functions: list[str],
    *,
    finding_timeout: float,
    timeout: float,
    search_seconds: float = 3.0,
    harvest: bool = True,
    keras: str = "3",
    fix: bool = True,
) -> Run:
    """Every finding of `path` through the harness, after checking the static pass flags
    exactly `functions` (sorted) there."""
    scan = scan_source((repo / path).read_text(encoding="utf-8"), path)
    assert scan.error is None, scan.error
    findings = [f.to_json() for f in scan.findings]
    assert sorted(f["function"] for f in findings) == functions
    job = {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "search_seconds": search_seconds,
        "finding_timeout": finding_timeout,
        "harvest": harvest,
        "keras": keras,
        "fix": fix,  # False: no fix stage after a proof (a test about the proof alone)
    }
    result = with_reproducers(LocalRunner().run(job, timeout=timeout), findings)
    assert result.outcome == "ok", (result.reason, result.stderr[-2000:])
    return Run(repo, result, {f["function"]: f["fingerprint"] for f in findings})


def with_reproducers(result: RunResult, findings: list[dict[str, Any]]) -> RunResult:
    """The records with each confirmation's reproducer as the host writes it from the
    record's plan (runners/trusted.py): the text a review shows."""
    by_fingerprint = {f["fingerprint"]: f for f in findings}
    for record in result.records:
        if "reproducer_plan" in record and record.get("stage") in (None, "precision"):
            found = by_fingerprint[record["fingerprint"]]
            record["reproducer"] = written_reproducer(
                record, found["path"], found["line"], found["op"], found["call"]
            )
    return result


def run_script(repo: Path, source: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`source` run as a script in `repo` (a reproducer stands alone: nothing but the
    repository on its path)."""
    script = repo / "repro_check.py"
    script.write_text(source, encoding="utf-8")
    try:
        return subprocess.run(
            [sys.executable, str(script)],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": str(repo)},
        )
    finally:
        script.unlink()


def confirmed_reproducer(repo: Path, run: Run) -> str:
    """The run's one finding's reproducer, after checking it is confirmed and that the
    reproducer fails on its own in a plain python child."""
    (record,) = [r for r in run.result.records if r.get("stage") is None]
    assert record["status"] == "confirmed", record
    check = run_script(repo, record["reproducer"])
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]
    return str(record["reproducer"])
