"""The Runner interface: where the dynamic pass runs the PR's code.

A runner takes one job (the JSON the harness reads on stdin: the checkout in `repo`, the
findings, the configured entries, budgets, the device) and a wall-clock budget, runs
`python -m runners.harness` somewhere it cannot hurt the worker, and returns a `RunResult`:

- `outcome`: `ok`, `timeout`, `out-of-memory`, `crashed` or `isolation-unavailable`, with a
  short `reason` when it is not `ok`;
- `records`: one per finding the harness finished, also when the run ended badly (the harness
  flushes each record as it finishes, the runner keeps what arrived before the end);
- `isolation`: what the sandbox actually enforced (network, user, pid namespace, ...), so a
  run that could not cut the network says so in the result instead of silently running.

`on_record`, when given, is called with each record as it arrives (progress for a check run).

Implementations: `runners.local.LocalRunner` (a hardened child process, the embedded default)
and `runners.docker.DockerRunner` (a container per job, production).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Outcome = Literal["ok", "timeout", "out-of-memory", "crashed", "isolation-unavailable"]
OUTCOMES: tuple[Outcome, ...] = (
    "ok",
    "timeout",
    "out-of-memory",
    "crashed",
    "isolation-unavailable",
)
OnRecord = Callable[[dict[str, Any]], None]

# Markers of a process that died because an allocation failed (Python, glibc, C++, PyTorch).
MEMORY_MARKERS = (
    "MemoryError",
    "std::bad_alloc",
    "Cannot allocate memory",
    "can't allocate memory",
    "out of memory",
    "OOM",
)


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed run. None switches a limit off.

    The defaults leave room for `import torch, tensorflow` and a search (measured: the two
    imports peak at about 1.9 GB of address space and 0.75 GB resident, a TensorFlow op
    at about 2.4 GB of address space), and stop a runaway job long before it hurts a worker.
    """

    memory_bytes: int | None = 8 * 1024**3  # address space (RLIMIT_AS) / container memory
    cpu_seconds: int | None = None  # RLIMIT_CPU; None: 2 x the wall budget + 30 s
    processes: int | None = 1024  # RLIMIT_NPROC (threads count) / pids limit
    file_bytes: int | None = 256 * 1024**2  # RLIMIT_FSIZE: largest file the job may write
    open_files: int | None = 1024  # RLIMIT_NOFILE
    output_bytes: int = 32 * 1024 * 1024  # the records stream; past it the run stops
    stderr_bytes: int = 64 * 1024  # the tail of stderr kept for the reason
    cpus: float | None = None  # containers: CPU quota (cores); None: no quota
    tmpfs_bytes: int = 512 * 1024**2  # HOME, TMPDIR: container /tmp, job workspace

    def cpu_limit(self, timeout: float) -> int | None:
        if self.cpu_seconds is not None:
            return self.cpu_seconds
        return int(2 * timeout) + 30


@dataclass
class RunResult:
    outcome: Outcome
    records: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    stderr: str = ""
    # What the sandbox enforced: {"network": True, "user": "numcheck-640001", ...}, and
    # "warnings" for each protection that was not available on this machine.
    isolation: dict[str, Any] = field(default_factory=dict)

    @property
    def warnings(self) -> list[str]:
        return list(self.isolation.get("warnings", []))


class Runner(Protocol):
    """Runs the harness on one job somewhere safe."""

    def run(
        self, job: dict[str, Any], timeout: float, on_record: OnRecord | None = None
    ) -> RunResult: ...


class RecordStream:
    """Parses the harness's record lines as bytes arrive: only lines carrying the job's nonce
    count (the PR's code can print, but cannot guess the nonce), at most `cap` bytes are
    accepted, and each finished record goes to `on_record` at once."""

    def __init__(self, nonce: str, cap: int, on_record: OnRecord | None = None):
        self.nonce = nonce
        self.cap = cap
        self.on_record = on_record
        self.records: list[dict[str, Any]] = []
        self.done = False
        self.received = 0
        self.overflow = False
        self.sandbox: dict[str, Any] = {}  # what the harness's supervisor enforces inside
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        if self.overflow:
            return
        self.received += len(chunk)
        if self.received > self.cap:
            self.overflow = True
            return
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line)

    def close(self) -> None:
        if self._partial and not self.overflow:
            self._line(self._partial)
        self._partial = b""

    def _line(self, raw: bytes) -> None:
        try:
            record = json.loads(raw.decode("utf-8", "replace"))
        except json.JSONDecodeError:
            return  # only our JSON lines count
        if not isinstance(record, dict) or record.pop("nonce", None) != self.nonce:
            return
        if record.get("done"):
            self.done = True
        elif isinstance(record.get("sandbox"), dict):
            self.sandbox = record["sandbox"]
        elif "fingerprint" in record:
            self.records.append(record)
            if self.on_record is not None:
                self.on_record(record)


def add_sandbox_report(report: dict[str, Any], stream: RecordStream) -> None:
    """`report["seccomp"]`: whether the supervisor's seccomp filter held (runners/seccomp.py),
    with a warning saying why not when the supervisor said it did not. A harness that never
    spoke (it died first) has its outcome say so; its filter is not reported as held."""
    said = stream.sandbox
    report["seccomp"] = said.get("seccomp") is True
    if said and not report["seccomp"]:
        why = said.get("why")
        why = why if isinstance(why, str) else "the supervisor gave no reason"
        report.setdefault("warnings", []).append(
            f"no seccomp filter (sockets other than AF_UNIX stay open to the job): {why[:300]}"
        )


def looks_out_of_memory(stderr: str) -> bool:
    tail = stderr[-4000:]
    return any(marker in tail for marker in MEMORY_MARKERS)
