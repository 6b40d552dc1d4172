"""The local runner: the harness in a child process, with a scrubbed environment and a
wall-clock limit, its whole process group killed on timeout.

This is the embedded default. The sandbox issue hardens it (rlimits, an unprivileged user,
no network); what holds today: the PR's code never runs in numcheck's own process, never sees
numcheck's environment (tokens, keys, secrets), and cannot outlive its time budget.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Outcome = Literal["ok", "timeout", "crashed"]
# The only variables the child inherits; everything else (NUMCHECK_*, GITHUB_*, cloud
# credentials, tokens) stays out.
PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT")


@dataclass
class RunResult:
    outcome: Outcome
    records: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    stderr: str = ""


def scrubbed_env(home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
    env.update({"HOME": str(home), "TMPDIR": str(home), "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
                "CUDA_VISIBLE_DEVICES": os.environ.get("NUMCHECK_CUDA_DEVICES", "")})
    return env


class LocalRunner:
    def __init__(self, python: str | None = None, max_output_bytes: int = 32 * 1024 * 1024):
        self.python = python or sys.executable
        self.max_output_bytes = max_output_bytes

    def run(self, job: dict[str, Any], timeout: float) -> RunResult:
        nonce = secrets.token_hex(16)  # records without it were not written by the harness
        job = {**job, "nonce": nonce}
        with tempfile.TemporaryDirectory(prefix="numcheck-home-") as home:
            proc = subprocess.Popen(
                [self.python, "-m", "runners.harness"], cwd=job["repo"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**scrubbed_env(Path(home)), "PYTHONPATH": _own_root()},
                start_new_session=True)
            try:
                out, err = proc.communicate(json.dumps(job).encode(), timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                out, err = proc.communicate()
                timed_out = True
        records, done = _parse(out[: self.max_output_bytes], nonce)
        stderr = err.decode("utf-8", "replace")[-4000:]
        if timed_out:
            return RunResult("timeout", records, f"the sandboxed run passed its {timeout:g} s "
                                                 "limit and was killed", stderr)
        if proc.returncode != 0 or not done:
            return RunResult("crashed", records, f"the harness exited with status "
                                                 f"{proc.returncode}", stderr)
        return RunResult("ok", records, "", stderr)


def _own_root() -> str:
    """Where `runners` and `analyzers` are importable from, for the child's sys.path."""
    return str(Path(__file__).resolve().parent.parent)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _parse(out: bytes, nonce: str) -> tuple[list[dict[str, Any]], bool]:
    records: list[dict[str, Any]] = []
    done = False
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # the PR's code printed something; only our JSON lines count
        if not isinstance(record, dict) or record.pop("nonce", None) != nonce:
            continue
        if record.get("done"):
            done = True
        elif "fingerprint" in record:
            records.append(record)
    return records, done
