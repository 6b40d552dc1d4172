"""The harness's trusted half: it runs inside the sandbox but never imports the PR's code.

`python -I -m runners.harness` starts here. The supervisor takes the job and its nonce from
stdin, hands the job *without the nonce* to a worker (`runners.harness` again, with
`--worker`: a child process in its own session, importing this supervisor's own copy of
numcheck), and relays the worker's records to the runner, adding the nonce itself. The
worker is where the PR's code runs; whatever it does, it can reach neither the nonce nor the
runner's channel, so:

- a record is accepted only for the stage the worker announced last (`{"begin": fingerprint,
  "stage": "confirm" | "precision" | "fix" | "harvest", "seconds": limit}`), once per finding
  and stage, with a known status (a precision record only after a not-triggered
  confirmation): the PR's code can spoil its own finding's verdict, never another's;
- every stage has a deadline the supervisor enforces by killing the worker's whole session
  (SIGKILL), so blocking SIGALRM, the worker's own per-finding signal, no longer holds the
  job; a worker that dies (a segfault in an extension, `os._exit`, the kernel's OOM killer)
  costs only the finding it was on;
- after a kill or a death, a fresh worker goes on with the findings still owed (without the
  harvest when the harvest was what had to be stopped);
- the supervisor marks itself non-dumpable, so a process of the same uid can neither ptrace
  it nor read its memory or descriptors through /proc;
- before the worker starts, the supervisor installs a seccomp filter (runners/seccomp.py)
  that every process of the job inherits, and says whether it holds in a first
  `{"sandbox": {...}}` record.

Only the standard library here: nothing of numcheck's numerics, nothing of the checkout.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runners.seccomp import install as install_seccomp  # the standard library's ctypes only
from runners.warm_python import WARM_HELPER  # the standard library only

STATUSES = frozenset({"confirmed", "not-triggered", "potential", "error"})
FIX_STATUSES = frozenset({"validated", "none-validated", "error"})
GRACE_SECONDS = 5.0  # past a stage's own limit (its SIGALRM), before the worker is killed
# Outside any stage (starting up: the frameworks' imports; between two findings, where only a
# thread the PR's code left running could hold it) the worker gets this long.
IDLE_SECONDS = 300.0
LINE_CAP = 8 * 1024**2  # a record line longer than this is not a record
STDERR_HEAD = 32 * 1024  # of each worker's stderr, passed on as it comes
STDERR_TAIL = 32 * 1024  # and its last bytes, passed on when the worker ends
PR_SET_DUMPABLE = 4

Emit = Callable[[dict[str, Any]], None]


def not_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): no ptrace and no /proc/<pid>/mem or fd access by the same
    uid. An exec'd child is dumpable again, which is why the worker is exec'd."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@dataclass
class Ledger:
    """What the runner is still owed: a main record per finding, a fix record per confirmed
    finding whose fix stage was asked for; and what it may still get: a precision record per
    finding float32 found nothing for (the worker's second search, which may not come)."""

    findings: list[dict[str, Any]]
    fix: bool
    owed: set[str] = field(default_factory=set)
    fixes_owed: set[str] = field(default_factory=set)
    precision_allowed: set[str] = field(default_factory=set)
    harvest: bool = True

    def __post_init__(self) -> None:
        self.owed = {f["fingerprint"] for f in self.findings}

    def todo(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["fingerprint"] in self.owed]

    def accept(self, record: dict[str, Any], stage: dict[str, Any] | None) -> bool:
        """True for a record of the announced stage, owed, with a known status."""
        if stage is None or record.get("fingerprint") != stage.get("begin"):
            return False
        fingerprint = record["fingerprint"]
        if record.get("stage") == "fix":
            fix = record.get("fix")
            if (
                stage.get("stage") != "fix"
                or fingerprint not in self.fixes_owed
                or not isinstance(fix, dict)
                or fix.get("status") not in FIX_STATUSES
            ):
                return False
            self.fixes_owed.discard(fingerprint)
            return True
        if record.get("stage") == "precision":
            if (
                stage.get("stage") != "precision"
                or fingerprint not in self.precision_allowed
                or record.get("status") not in STATUSES
            ):
                return False
            self.precision_allowed.discard(fingerprint)
            if record["status"] == "confirmed" and self.fix:
                self.fixes_owed.add(fingerprint)
            return True
        if (
            stage.get("stage") != "confirm"
            or fingerprint not in self.owed
            or record.get("status") not in STATUSES
            or "stage" in record
        ):
            return False
        self.owed.discard(fingerprint)
        if record["status"] == "confirmed" and self.fix:
            self.fixes_owed.add(fingerprint)
        if record["status"] == "not-triggered":
            self.precision_allowed.add(fingerprint)
        return True

    def fail(self, stage: dict[str, Any] | None, why: str, emit: Emit) -> None:
        """The worker stopped in `stage` (None: between stages or before the first): that
        stage's finding gets the reason; fix stages the dead worker still owed cannot run."""
        name = (stage or {}).get("stage")
        fingerprint = (stage or {}).get("begin")
        if name == "confirm" and fingerprint in self.owed:
            self.owed.discard(fingerprint)
            emit({"fingerprint": fingerprint, "status": "error", "error": why})
        elif name == "precision" and fingerprint in self.precision_allowed:
            # the float32 verdict stands; the record says why the second search has none
            emit(
                {"fingerprint": fingerprint, "stage": "precision", "status": "error", "error": why}
            )
        elif name == "harvest":
            self.harvest = False
        elif name is None:  # nothing to blame: what is owed cannot be run again either
            for finding in self.todo():
                self.owed.discard(finding["fingerprint"])
                emit(
                    {
                        "fingerprint": finding["fingerprint"],
                        "status": "error",
                        "error": f"not run: {why}",
                    }
                )
        for owed in sorted(self.fixes_owed):
            emit(
                {
                    "fingerprint": owed,
                    "stage": "fix",
                    "fix": {
                        "status": "error",
                        "reason": why
                        if owed == fingerprint and name == "fix"
                        else f"not run: the worker stopped ({why})",
                    },
                }
            )
        self.fixes_owed.clear()
        self.precision_allowed.clear()  # a fresh worker has no float32 search to resume


# The worker's start: isolated (`-I`: no working directory, no PYTHON* variables on its path),
# importing the harness from where this supervisor's came from, never from the checkout.
# First it forks the reproducers' warm helper from the helper's own program, run as text
# before anything of numcheck is imported: torch is imported once for both
# (runners/warm_python_server.py fork_server), and the harness adopts the helper.
WARM_BOOT = (
    "import os, sys; "
    "helper = os.path.join(sys.argv[1], 'runners', 'warm_python_server.py'); "
    "warm = {'__name__': 'numcheck_warm_helper'}; "
    "exec(compile(open(helper, encoding='utf-8').read(), helper, 'exec'), warm); "
    f"os.environ[{WARM_HELPER!r}] = warm['fork_server'](); "
)
WORKER_BOOT = (
    WARM_BOOT + "sys.path.insert(0, sys.argv[1]); "
    "from runners.harness import main; raise SystemExit(main())"
)
OWN_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _worker(job: dict[str, Any]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", WORKER_BOOT, OWN_ROOT, "--worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
    return proc


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


def _ended(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if -returncode == signal.SIGKILL:
            name += (
                " (the job's memory limit, all its processes together, sends it, unless "
                "the code killed itself)"
            )
        return f"crashed: the process running the code died of {name}"
    return f"crashed: the process running the code exited with status {returncode}"


class Output:
    """The worker's stderr (the PR's prints and tracebacks): the first STDERR_HEAD bytes go on
    to the supervisor's stderr as they come, then only the last STDERR_TAIL bytes are kept,
    written when the worker ends. A flood costs the reading and nothing downstream: the
    runner's channels (a container's log among them, which rotates) see a bounded amount."""

    def __init__(self) -> None:
        self.passed = 0
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = STDERR_HEAD - self.passed
        if room > 0:
            _write_stderr(chunk[:room])
            self.passed += min(room, len(chunk))
            chunk = chunk[room:]
        self.tail += chunk
        over = len(self.tail) - STDERR_TAIL
        if over > 0:
            del self.tail[:over]
            self.dropped += over

    def close(self) -> None:
        if self.dropped:
            _write_stderr(
                f"\n[numcheck supervisor: {self.dropped} bytes of the code's output "
                "left out]\n".encode()
            )
        _write_stderr(bytes(self.tail))
        self.tail.clear()
        self.dropped = 0


def _write_stderr(data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.buffer.write(data)
        sys.stderr.buffer.flush()


def _drain(err: int, output: Output) -> None:
    """What the worker's stderr holds now, without waiting for its end (a process the PR's
    code left behind may keep the pipe open)."""
    for _ in range(1024):
        try:
            text = os.read(err, 65536)
        except OSError:  # BlockingIOError among them: nothing more for now
            return
        if not text:
            return
        output.feed(text)


def drive(
    proc: subprocess.Popen[bytes], ledger: Ledger, emit: Emit
) -> tuple[dict[str, Any] | None, str | None]:
    """Relay one worker's records until it finishes (None, None), or stops or is stopped in a
    stage: (that stage, why). Its stderr, where there is a pipe for it, is passed on bounded
    (`Output`)."""
    output = Output()
    err = proc.stderr.fileno() if proc.stderr is not None else None
    if err is not None:
        os.set_blocking(err, False)
    try:
        return _relay(proc, ledger, emit, output, err)
    finally:
        if err is not None:
            _drain(err, output)
        output.close()


def _relay(
    proc: subprocess.Popen[bytes], ledger: Ledger, emit: Emit, output: Output, err: int | None
) -> tuple[dict[str, Any] | None, str | None]:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    stage: dict[str, Any] | None = None
    deadline = time.monotonic() + IDLE_SECONDS
    limit = 0.0
    partial = b""
    done = False
    while True:
        if time.monotonic() >= deadline:  # checked on every turn: a flood keeps select busy
            _kill(proc)
            if stage is None:
                return None, (
                    f"the worker did nothing for {IDLE_SECONDS:g} s outside "
                    "any finding (the supervisor stopped it)"
                )
            return stage, (
                f"timeout: the code did not finish within {limit:g} s (the supervisor stopped it)"
            )
        watched = [fd] if err is None else [fd, err]
        ready, _, _ = select.select(watched, [], [], max(0.0, deadline - time.monotonic()))
        if err is not None and err in ready:
            try:
                text = os.read(err, 65536)
            except BlockingIOError:
                text = None
            if text == b"":
                err = None  # closed: only the records are left to watch
            elif text:
                output.feed(text)
        if fd not in ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            returncode = proc.wait()
            if done and returncode == 0:
                return None, None
            return stage, _ended(
                returncode
            ) if returncode else "the worker ended without finishing its job"
        lines = (partial + chunk).split(b"\n")
        partial = lines.pop()
        if len(partial) > LINE_CAP:
            _kill(proc)
            return stage, "crashed: the worker wrote a record past the size limit"
        for line in lines:
            try:
                message = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if not isinstance(message, dict):
                continue
            if "begin" in message:
                limit = float(message.get("seconds") or 0.0)
                stage = {"begin": message["begin"], "stage": message.get("stage")}
                deadline = time.monotonic() + limit + max(GRACE_SECONDS, 0.1 * limit)
            elif message.get("done") is True:
                done = True
            elif ledger.accept(message, stage):
                emit(message)
                stage, deadline = None, time.monotonic() + IDLE_SECONDS
            else:
                print(
                    f"numcheck supervisor: dropped a record for "
                    f"{str(message.get('fingerprint'))[:40]!r} outside its stage",
                    file=sys.stderr,
                    flush=True,
                )


def supervise(job: dict[str, Any], emit: Emit) -> None:
    """Run the job's findings through workers until every record owed is emitted."""
    ledger = Ledger(
        list(job["findings"]), bool(job.get("fix", True)), harvest=bool(job.get("harvest", True))
    )
    for _ in range(len(ledger.findings) + 2):
        todo = ledger.todo()
        if not todo:
            return
        proc = _worker({**job, "findings": todo, "harvest": ledger.harvest})
        try:
            stage, why = drive(proc, ledger, emit)
        finally:
            if proc.poll() is None:
                _kill(proc)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        if why is None:
            ledger.fail(None, "the worker did not report it", emit)
            return
        ledger.fail(stage, why, emit)
    ledger.fail(None, "the worker was restarted too often", emit)


def main() -> int:
    job = json.load(sys.stdin)
    nonce = job.pop("nonce", None)
    out = sys.stdout
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    not_dumpable()
    refused = install_seccomp()  # before the worker exists: every process of the job inherits it

    def emit(record: dict[str, Any]) -> None:
        out.write(json.dumps({**record, "nonce": nonce}) + "\n")
        out.flush()

    emit({"sandbox": {"seccomp": refused is None, "why": refused}})
    supervise(job, emit)
    emit({"done": True})
    return 0
