"""Reproducer runs that do not pay for `import torch` each time.

The harness checks each reproducer as a user would run it, a script in a Python of its own,
once on the head and once per fix candidate. A fresh Python spent about 2 s of CPU importing
torch before the script's first line; on a 2-core worker that was half of `numcheck demo`.
`WarmPython` keeps one helper process that has imported torch and nothing else
(runners/warm_python_server.py) and forks it per script, so each run starts after that import.

Inside the sandbox only: the helper is the harness worker's child, under the same limits,
and it never runs a script's code itself. A sandboxed worker forks it at its start, before
anything of numcheck or the checkout is imported, so torch is imported once for both
(`WarmPython.adopt`); elsewhere it is started on first use. When it cannot start or dies,
runs fall back to a fresh Python (`run_cold`), so a reproducer is never lost to the shortcut.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

SERVER_SOURCE = Path(__file__).with_name("warm_python_server.py")
# where a harness worker's boot leaves the helper it forked, for `WarmPython.adopt`
WARM_HELPER = "NUMCHECK_WARM_HELPER"
STDERR_TAIL = 2000  # characters of the script's stderr that come back
ANSWER_SLACK = 15.0  # seconds past a run's timeout before the helper counts as hung


def run_cold(
    script: Path, cwd: Path, pythonpath: str, timeout: float, python: str = sys.executable
) -> tuple[int | None, str]:
    """`python script` in a fresh interpreter: (exit status, None on timeout; stderr's tail)."""
    try:
        proc = subprocess.run(
            [python, str(script)],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": pythonpath},
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return proc.returncode, proc.stderr[-STDERR_TAIL:]


class WarmPython:
    """Runs scripts in children forked from one interpreter that imported torch at start."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self._proc: subprocess.Popen[bytes] | Forked | None = None
        self._answers: AnswerLines | None = None
        self._folder: str | None = None
        self._broken = False
        self._closes_at_exit = False
        self._lock = threading.Lock()
        self.warm_runs = 0  # how many runs the helper served (the tests read it)

    def run(
        self, script: Path, cwd: Path, pythonpath: str, timeout: float
    ) -> tuple[int | None, str]:
        """As `run_cold`, from the warm helper where it answers."""
        with self._lock:
            proc = None if self._broken else self._started()
            if proc is None:
                return run_cold(script, cwd, pythonpath, timeout, self.python)
            assert self._folder is not None
            stderr = Path(self._folder) / "stderr"
            request = {
                "script": str(script),
                "cwd": str(cwd),
                "pythonpath": pythonpath,
                "stderr": str(stderr),
                "timeout": timeout,
            }
            child = None
            try:
                assert proc.stdin is not None and self._answers is not None
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.flush()
                child = int(self._answers.next(ANSWER_SLACK)["pid"])
                returncode = self._answers.next(timeout + ANSWER_SLACK)["returncode"]
                if not (returncode is None or isinstance(returncode, int)):
                    raise ValueError(f"the warm interpreter answered {returncode!r}")
            except (OSError, ValueError, KeyError, TypeError):  # it died or hung: go cold
                self._give_up(child, broken=True)
                return run_cold(script, cwd, pythonpath, timeout, self.python)
            except BaseException:  # the finding's own time limit, mid-run: a new helper next
                self._give_up(child, broken=False)
                raise
            self.warm_runs += 1
            return returncode, _tail(stderr)

    def adopt(self, forked: str) -> bool:
        """Serve runs from a helper the worker forked at its start ("pid,request_fd,answer_fd"
        from warm_python_server.fork_server), which imported torch with the worker instead
        of after it. A text that is not one leaves the helper to be started on first use."""
        try:
            pid, request, answer = (int(part) for part in forked.split(","))
        except ValueError:
            return False
        with self._lock:
            if self._proc is not None or self._broken:
                return False
            self._folder = tempfile.mkdtemp(prefix="numcheck-warm-")
            self._hold(Forked(pid, request, answer))
        return True

    def close(self) -> None:
        with self._lock:
            self._stop()

    # ------------------------------------------------------------ pieces

    def _started(self) -> subprocess.Popen[bytes] | Forked | None:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if self._proc is not None:  # it exited between runs
            self._give_up(None, broken=True)
            return None
        self._folder = tempfile.mkdtemp(prefix="numcheck-warm-")
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        try:
            proc = subprocess.Popen(
                [self.python, "-c", SERVER_SOURCE.read_text(encoding="utf-8")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=self._folder,
                env=env,
            )
        except OSError:
            self._give_up(None, broken=True)
            return None
        self._hold(proc)
        return proc

    def _hold(self, proc: subprocess.Popen[bytes] | Forked) -> None:
        """`proc` as the helper (started here, or forked by the worker): its answers read
        from its stdout, and stopped when this process exits."""
        assert proc.stdout is not None
        self._proc = proc
        self._answers = AnswerLines(proc.stdout.fileno())
        if not self._closes_at_exit:
            atexit.register(self.close)
            self._closes_at_exit = True

    def _give_up(self, child: int | None, *, broken: bool) -> None:
        """Stop the helper and whatever run it had going; after a `broken` one, later runs
        are cold."""
        self._broken = self._broken or broken
        if child is not None:
            with contextlib.suppress(OSError):
                os.killpg(child, signal.SIGKILL)
        self._stop()

    def _stop(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()
            with contextlib.suppress(Exception):
                self._proc.wait(timeout=5)
            for pipe in (self._proc.stdin, self._proc.stdout):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()
            self._proc = None
            self._answers = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class Forked:
    """A helper forked by the worker itself (`WarmPython.adopt`), handled as far as
    `WarmPython` handles a `subprocess.Popen`: its request pipe as `stdin`, its answers'
    descriptor, and its exit status."""

    def __init__(self, pid: int, request_fd: int, answer_fd: int) -> None:
        self.pid = pid
        self.stdin: IO[bytes] | None = os.fdopen(request_fd, "wb")
        self.stdout: IO[bytes] | None = os.fdopen(answer_fd, "rb", buffering=0)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone all the same
                self.returncode = -signal.SIGKILL
            else:
                if done:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


class AnswerLines:
    """The helper's answers, one JSON object per line, read from its stdout's descriptor.

    Its own buffer, not a file object's: the helper writes the child's pid and, a moment
    later, its exit status; when both are in the pipe before the first read, a buffered
    `readline` takes both, and a `select` on the descriptor for the second then waits out
    the run's whole timeout for bytes that already arrived."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = b""

    def next(self, wait: float) -> dict[str, Any]:
        """The next answer; ValueError when none comes within `wait` seconds or the helper
        closed its end."""
        deadline = time.monotonic() + wait
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            ready = left > 0 and select.select([self.fd], [], [], left)[0]
            chunk = os.read(self.fd, 65536) if ready else b""
            if not chunk:
                raise ValueError("the warm interpreter did not answer")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise ValueError(f"the warm interpreter answered {line!r}")
        return answer


def _tail(path: Path) -> str:
    """The last STDERR_TAIL characters of the file, without reading all of a huge one."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(handle.tell() - 4 * STDERR_TAIL, 0))
            return handle.read().decode("utf-8", "replace")[-STDERR_TAIL:]
    except OSError:
        return ""
