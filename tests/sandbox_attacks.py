"""Hostile PR modules shared by the local runner's tests (tests/test_sandbox.py) and the
Docker runner's (tests/test_docker_runner.py): probes of what of the host a job reaches, each
raising ImportError with what it found (a finding's `error` carries it back), an ordinary
torch.log finding that must still be confirmed beside them, a PR that brings its own harness,
and a UNIX socket service outside the sandbox."""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
from pathlib import Path
from typing import Any

from analyzers.static import scan_source

GIT_TOKEN = "ghp_plantedGitConfigToken0123456789"
OTHER_JOB_TEXT = "planted-other-job-source"
OTHER_CHECKOUT_TEXT = "planted-other-checkout-token"
DATABASE_TEXT = "planted-database-row"
SOCKET_TEXT = "outside"

PROBE_SOCKET = """\
import socket

import torch
from torch import Tensor

def probe() -> None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(2)
            conn.connect(SOCKET_PATH)
            said = conn.recv(100).decode()
    except OSError as exc:
        said = f"probe-ran, blocked: {exc}"
    raise ImportError(f"socket said: {said}")


probe()


def through_socket(x: Tensor) -> Tensor:
    probe()  # also when the module is loaded without running its top level
    return torch.log(x)
"""

PROBE_FILES = """\
import glob
import json
import os

import torch
from torch import Tensor

def probe() -> None:
    seen = {"groups": os.getgroups(), "root": sorted(os.listdir("/"))}
    for path in FILES:
        try:
            with open(path) as handle:
                seen[path] = handle.read()
        except OSError as exc:
            seen[path] = f"unreadable: {exc.strerror}"
    seen["other jobs"] = [p for p in glob.glob("/tmp/numcheck-head-*/*")
                          + glob.glob("/tmp/numcheck-sandbox-*") if p != os.environ["HOME"]]
    for pattern in ("/tmp/numcheck-head-*/*", "/var/tmp/numcheck-test-*/*"):
        for path in glob.glob(pattern):
            try:
                seen[path] = open(path).read()
            except OSError as exc:
                seen[path] = f"unreadable: {exc.strerror}"
    host = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and b"HOST_TOKEN" in open(f"/proc/{pid}/cmdline", "rb").read():
                host.append(pid)
        except OSError:
            pass
    seen["host processes"] = host
    import socket
    sockets = {}
    for family, kind in (("inet", socket.SOCK_STREAM), ("inet6", socket.SOCK_DGRAM),
                         ("netlink", socket.SOCK_RAW), ("packet", socket.SOCK_RAW)):
        try:
            socket.socket(getattr(socket, "AF_" + family.upper()), kind).close()
            sockets[family] = "opened"
        except OSError as exc:
            sockets[family] = exc.errno
    left, right = socket.socketpair()
    left.send(b"x")
    sockets["pair"] = right.recv(1).decode()
    seen["sockets"] = sockets
    raise ImportError("probe-ran " + json.dumps(seen))


probe()


def through_files(x: Tensor) -> Tensor:
    probe()  # also when the module is loaded without running its top level
    return torch.log(x)
"""

ORDINARY = """\
import torch
from torch import Tensor


def log_of_softmax(logits: Tensor) -> Tensor:
    probs = torch.softmax(logits, dim=-1)
    return torch.log(probs)
"""

FAKE_HARNESS = """\
import json
import sys
from pathlib import Path

job = json.load(sys.stdin)
for finding in job["findings"]:
    print(json.dumps({"fingerprint": finding["fingerprint"], "status": "not-triggered",
                      "forged": True, "nonce": job["nonce"]}), flush=True)
print(json.dumps({"done": True, "nonce": job["nonce"]}), flush=True)
"""

FAKE_ANALYZERS = """\
from pathlib import Path

(Path(__file__).resolve().parent.parent / "analyzers-shadowed").write_text("yes")
"""


def seen_by_probe(error: str) -> dict[str, Any]:
    """The JSON the file probe raised, from a finding's error (which may go on after it)."""
    seen, _ = json.JSONDecoder().raw_decode(error.split("probe-ran ", 1)[1])
    return dict(seen)


class SocketService:
    """A UNIX socket service outside the sandbox (an agent, a database) that tells whoever
    connects `outside`."""

    def __init__(self) -> None:
        self.path = f"/tmp/agent-{secrets.token_hex(4)}.sock"
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        # 0600 as an agent's socket; as root, the job is another user: 0666 as PostgreSQL's
        # socket, which any local user may dial
        os.chmod(self.path, 0o666 if os.geteuid() == 0 else 0o600)
        self.server.listen(8)
        self.server.settimeout(0.2)
        self.served = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(SOCKET_TEXT.encode())
            self.served += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.server.close()
        Path(self.path).unlink(missing_ok=True)


# A finding whose code blocks the worker's own deadline signal and loops, and one whose code
# segfaults: only the supervisor (runners/supervisor.py) can end the first, and the second
# must cost only its own finding.
UNRULY_FUNCTIONS = """

def blocker(x: Tensor) -> Tensor:
    import signal

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass
    return torch.log(x)


def segfault(x: Tensor) -> Tensor:
    import ctypes

    ctypes.string_at(0)
    return torch.log(x)
"""


def write_modules(
    repo: Path, modules: dict[str, str]
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Write `modules` (path: source) into `repo` and scan them: each flagged function's
    fingerprint, and the findings as a job carries them, in the modules' order."""
    fingerprints, findings = {}, []
    for path, source in modules.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(source, encoding="utf-8")
        for finding in scan_source(source, path).findings:
            fingerprints[finding.function] = finding.fingerprint
            findings.append(finding.to_json())
    return fingerprints, findings
