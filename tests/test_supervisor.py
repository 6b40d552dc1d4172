"""The harness's supervisor (runners/supervisor.py) on its own: which records it relays, what
it reports for a worker that hangs, dies or forges, and that it needs neither torch nor the
PR's code. The workers here are small Python programs speaking the worker's protocol, so
these tests run in the static tier; the real worker under attack is in tests/test_sandbox.py
and tests/test_docker_runner.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from runners import supervisor
from runners.supervisor import Ledger, drive

FINDINGS = [{"fingerprint": "a"}, {"fingerprint": "b"}, {"fingerprint": "c"}]


def worker(body: str, stderr: int | None = None) -> subprocess.Popen[bytes]:
    """A stand-in worker: `say(message)` writes one protocol line."""
    program = (
        "import json, os, signal, sys, time\n"
        "def say(m):\n    sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()\n"
        + textwrap.dedent(body)
    )
    return subprocess.Popen(
        [sys.executable, "-c", program],
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
    )


def run(body: str, ledger: Ledger) -> tuple[Any, Any, list[dict[str, Any]], float]:
    emitted: list[dict[str, Any]] = []
    started = time.monotonic()
    stage, why = drive(worker(body), ledger, emitted.append)
    return stage, why, emitted, time.monotonic() - started


def test_records_only_for_the_announced_stage_once_each() -> None:
    ledger = Ledger(FINDINGS, fix=True)
    stage, why, emitted, _ = run(
        """
        say({"fingerprint": "b", "status": "not-triggered"})   # before any stage: dropped
        say({"begin": "a", "stage": "confirm", "seconds": 5})
        say({"fingerprint": "b", "status": "not-triggered"})   # another finding's: dropped
        say({"fingerprint": "a", "status": "bogus"})           # unknown status: dropped
        say({"fingerprint": "a", "status": "confirmed", "elapsed": 1.0})
        say({"fingerprint": "a", "status": "error"})           # a second verdict: dropped
        say({"begin": "b", "stage": "confirm", "seconds": 5})
        say({"fingerprint": "b", "stage": "fix", "fix": {"status": "validated"}})  # wrong stage
        say({"fingerprint": "b", "status": "not-triggered"})
        say({"begin": "a", "stage": "fix", "seconds": 5})
        say({"fingerprint": "a", "stage": "fix", "fix": {"status": "validated"}})
        say({"done": True})
    """,
        ledger,
    )
    assert (stage, why) == (None, None)
    assert emitted == [
        {"fingerprint": "a", "status": "confirmed", "elapsed": 1.0},
        {"fingerprint": "b", "status": "not-triggered"},
        {"fingerprint": "a", "stage": "fix", "fix": {"status": "validated"}},
    ]
    assert ledger.owed == {"c"} and ledger.fixes_owed == set()


def test_a_precision_record_only_after_a_not_triggered_one_and_once() -> None:
    """The second search (in low precision) may replace a not-triggered verdict, once, in its
    own stage; a confirmation there owes its fix stage like any other."""
    ledger = Ledger(FINDINGS, fix=True)
    stage, why, emitted, _ = run(
        """
        say({"begin": "a", "stage": "confirm", "seconds": 5})
        say({"fingerprint": "a", "status": "confirmed"})
        say({"begin": "b", "stage": "confirm", "seconds": 5})
        say({"fingerprint": "b", "status": "not-triggered"})
        say({"begin": "b", "stage": "confirm", "seconds": 5})
        say({"fingerprint": "b", "stage": "precision", "status": "confirmed"})  # wrong stage
        say({"begin": "a", "stage": "precision", "seconds": 5})
        say({"fingerprint": "a", "stage": "precision", "status": "error"})  # was confirmed
        say({"begin": "b", "stage": "precision", "seconds": 5})
        say({"fingerprint": "b", "stage": "precision", "status": "confirmed"})
        say({"begin": "b", "stage": "precision", "seconds": 5})
        say({"fingerprint": "b", "stage": "precision", "status": "not-triggered"})  # twice
        say({"done": True})
    """,
        ledger,
    )
    assert (stage, why) == (None, None)
    assert emitted == [
        {"fingerprint": "a", "status": "confirmed"},
        {"fingerprint": "b", "status": "not-triggered"},
        {"fingerprint": "b", "stage": "precision", "status": "confirmed"},
    ]
    assert ledger.fixes_owed == {"a", "b"} and ledger.precision_allowed == set()


def test_a_worker_killed_in_its_precision_stage_leaves_the_float32_verdict() -> None:
    ledger = Ledger(FINDINGS, fix=False)
    emitted: list[dict[str, Any]] = []
    assert ledger.accept(
        {"fingerprint": "c", "status": "not-triggered"}, {"begin": "c", "stage": "confirm"}
    )
    ledger.fail({"begin": "c", "stage": "precision"}, "timeout: 9 s", emitted.append)
    assert emitted == [
        {"fingerprint": "c", "stage": "precision", "status": "error", "error": "timeout: 9 s"}
    ]
    assert ledger.precision_allowed == set() and "c" not in ledger.owed


def test_a_stage_past_its_limit_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor, "GRACE_SECONDS", 0.5)
    ledger = Ledger(FINDINGS, fix=False)
    stage, why, emitted, seconds = run(
        """
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})
        say({"begin": "a", "stage": "confirm", "seconds": 0.5})
        while True:
            pass
    """,
        ledger,
    )
    assert stage == {"begin": "a", "stage": "confirm"} and why.startswith("timeout"), why
    assert "supervisor" in why and seconds < 10 and emitted == []
    ledger.fail(stage, why, emitted.append)
    assert emitted == [{"fingerprint": "a", "status": "error", "error": why}]
    assert [f["fingerprint"] for f in ledger.todo()] == ["b", "c"]


def test_a_dead_worker_costs_its_stage_and_the_fixes_it_owed() -> None:
    ledger = Ledger(FINDINGS, fix=True)
    stage, why, emitted, _ = run(
        """
        say({"begin": "a", "stage": "confirm", "seconds": 5})
        say({"fingerprint": "a", "status": "confirmed"})
        say({"begin": "b", "stage": "confirm", "seconds": 5})
        os.kill(os.getpid(), signal.SIGSEGV)
    """,
        ledger,
    )
    assert stage == {"begin": "b", "stage": "confirm"} and "SIGSEGV" in why
    ledger.fail(stage, why, emitted.append)
    assert emitted[1:] == [
        {"fingerprint": "b", "status": "error", "error": why},
        {
            "fingerprint": "a",
            "stage": "fix",
            "fix": {"status": "error", "reason": f"not run: the worker stopped ({why})"},
        },
    ]
    assert [f["fingerprint"] for f in ledger.todo()] == ["c"]


def test_a_killed_harvest_is_not_tried_again() -> None:
    ledger = Ledger(FINDINGS, fix=False)
    ledger.fail({"begin": None, "stage": "harvest"}, "timeout", lambda record: None)
    assert ledger.harvest is False and len(ledger.todo()) == 3


def test_supervise_restarts_a_worker_for_what_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real entry point: the first worker dies on `b`, the second finishes `c`
    without harvesting again; the job's nonce never reaches a worker."""
    jobs: list[dict[str, Any]] = []
    scripts = iter(
        [
            'say({"begin": "a", "stage": "confirm", "seconds": 5})\n'
            'say({"fingerprint": "a", "status": "not-triggered"})\n'
            'say({"begin": "b", "stage": "confirm", "seconds": 5})\n'
            "os._exit(3)\n",
            'say({"begin": "c", "stage": "confirm", "seconds": 5})\n'
            'say({"fingerprint": "c", "status": "potential"})\n'
            'say({"done": True})\n',
        ]
    )

    def fake_worker(job: dict[str, Any]) -> subprocess.Popen[bytes]:
        jobs.append(job)
        return worker(next(scripts))

    monkeypatch.setattr(supervisor, "_worker", fake_worker)
    emitted: list[dict[str, Any]] = []
    supervisor.supervise({"findings": FINDINGS, "harvest": True, "fix": False}, emitted.append)
    assert [(r["fingerprint"], r["status"]) for r in emitted] == [
        ("a", "not-triggered"),
        ("b", "error"),
        ("c", "potential"),
    ]
    assert "exited with status 3" in emitted[1]["error"]
    assert [[f["fingerprint"] for f in job["findings"]] for job in jobs] == [["a", "b", "c"], ["c"]]
    assert all("nonce" not in job for job in jobs)


def test_the_harness_entry_point_keeps_the_nonce_from_the_worker(tmp_path: Any) -> None:
    """`python -I -m runners.harness` with no finding: the supervisor answers `done` with the
    nonce; and `not_dumpable` makes a process non-dumpable (PR_GET_DUMPABLE reads 0 after)."""
    job = {"repo": str(tmp_path), "findings": [], "nonce": "n0nce", "harvest": False}
    proc = subprocess.run(
        [sys.executable, "-I", "-m", "runners.harness"],
        input=json.dumps(job).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.decode().strip().splitlines()[-1]) == {
        "done": True,
        "nonce": "n0nce",
    }
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ctypes; from runners.supervisor import not_dumpable; "
            "print(not_dumpable(), ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert check.stdout.split() == ["True", "0"]


def test_a_worker_idle_outside_any_stage_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between findings only a thread the PR's code left running can hold the worker: past
    IDLE_SECONDS it is killed and what is owed is reported, not waited for."""
    monkeypatch.setattr(supervisor, "IDLE_SECONDS", 1.0)
    ledger = Ledger(FINDINGS, fix=False)
    stage, why, emitted, seconds = run(
        """
        say({"begin": "a", "stage": "confirm", "seconds": 5})
        say({"fingerprint": "a", "status": "not-triggered"})
        time.sleep(60)
    """,
        ledger,
    )
    assert stage is None and "outside any finding" in why and seconds < 10, why
    ledger.fail(stage, why, emitted.append)
    assert [(r["fingerprint"], r["status"]) for r in emitted] == [
        ("a", "not-triggered"),
        ("b", "error"),
        ("c", "error"),
    ]
    assert emitted[1]["error"] == f"not run: {why}"


def test_a_flood_on_stderr_is_passed_on_bounded(capfd: pytest.CaptureFixture[str]) -> None:
    """The PR's prints go to the worker's stderr: 20 MB of them reach the runner as the first
    and last 32 KiB and a count, and the record after the flood still arrives."""
    ledger = Ledger(FINDINGS, fix=False)
    emitted: list[dict[str, Any]] = []
    proc = worker(
        """
        say({"begin": "a", "stage": "confirm", "seconds": 60})
        sys.stderr.write("first words\\n")
        for _ in range(2000):
            sys.stderr.write("x" * 10_000)
        sys.stderr.write("last words\\n")
        sys.stderr.flush()
        say({"fingerprint": "a", "status": "potential"})
        say({"done": True})
    """,
        stderr=subprocess.PIPE,
    )
    assert drive(proc, ledger, emitted.append) == (None, None)
    assert emitted == [{"fingerprint": "a", "status": "potential"}]
    err = capfd.readouterr().err
    assert err.startswith("first words") and err.rstrip().endswith("last words"), err[-200:]
    assert len(err) < 70 * 1024 and "bytes of the code's output left out" in err
