"""A runner for the fix-stage tests: the real harness (`python -m runners.harness`) in a child
process with the local runner's scrubbed environment, without the sandbox's isolation (that
is the local runner's own tests' subject; these tests are about what the harness returns)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from runners.local import RunResult

ROOT = Path(__file__).resolve().parent.parent


class DirectRunner:
    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []

    def run(self, job: dict[str, Any], timeout: float, **_: Any) -> RunResult:
        self.jobs.append(job)
        nonce = secrets.token_hex(8)
        with tempfile.TemporaryDirectory(prefix="numcheck-fixtest-home-") as home:
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": home,
                "TMPDIR": home,
                "PYTHONPATH": str(ROOT),
                "PYTHONHASHSEED": "0",
                "OMP_NUM_THREADS": "1",
                "TF_CPP_MIN_LOG_LEVEL": "3",
                "CUDA_VISIBLE_DEVICES": "",
            }
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "runners.harness"],
                    cwd=job["repo"],
                    input=json.dumps({**job, "nonce": nonce}),
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    env=env,
                )
            except subprocess.TimeoutExpired as exc:
                return RunResult("timeout", [], str(exc), "")
        records: list[dict[str, Any]] = []
        done = False
        for line in proc.stdout.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(record, dict) or record.pop("nonce", None) != nonce:
                continue
            if record.get("done"):
                done = True
            elif "fingerprint" in record:
                records.append(record)
        if proc.returncode != 0 or not done:
            return RunResult("crashed", records, f"exit {proc.returncode}", proc.stderr[-4000:])
        return RunResult("ok", records, "", proc.stderr[-4000:])
