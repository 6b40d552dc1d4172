"""The local runner: the harness in a hardened child process (the embedded default, and what CI
exercises).

What holds for every run:
- a scrubbed environment: only PATH and the locale pass; nothing of numcheck's settings
  (tokens, keys, secrets) reaches the job; HOME and TMPDIR are a private, fresh workspace;
- rlimits on address space, CPU time, processes, file size and open files (`Limits`);
- a wall-clock limit: the run's process group is killed at `timeout`, and with it every
  process the job started (a pid namespace where the kernel allows one; otherwise, as root,
  every process left under the sandbox uid);
- output caps: the records stream is capped, stderr is drained and only its tail kept, so a
  job printing without end costs the worker neither memory nor a blocked pipe.

Where the kernel allows it (`unshare`, see `runners/jail.py`):
- no network: a new network namespace with nothing but a loopback that is down;
- a pid namespace: the job cannot see or signal the worker's processes, and everything it
  spawned dies with it, daemons included;
- a private mount namespace with a minimal root (`runners/jail.py`, `build_root`): the job
  sees only the system's /usr and libraries, a few files of /etc, the interpreter's
  installation, numcheck's own packages, its checkout (without .git) and workspace, a private
  /tmp, the ordinary device nodes and its own /proc; no host /tmp (other jobs' checkouts), no
  /run or /var/run (service sockets: a network namespace does not cover socket files), no
  /home, /root, /srv or /var. All of it read-only except the checkout, the workspace and the
  private /tmp. Where the minimal root cannot be built, the host's filesystem is shown
  read-only with those directories covered, and the result says so.
The harness starts isolated (`python -I`) from numcheck's installed packages with the workspace
as its working directory: a PR that adds its own `runners/harness.py` (or `analyzers/`)
cannot stand in for it; the checkout goes on sys.path only after the harness's own imports.
As root, the job runs as an unprivileged uid of its own, leased from a range for the run
(`runners/identities.py`: concurrent jobs never share a uid, a process quota or a sweep), or as
the configured `user`, with no supplementary groups; it owns the checkout for the run. As
another user, a user namespace provides the namespaces and the job keeps the worker's uid (and,
where the kernel will not drop them, its supplementary groups) with no capabilities.

What could not be enforced is listed in `RunResult.isolation["warnings"]`; with
`require_network_isolation=True` a run that cannot cut the network does not start and returns
`isolation-unavailable`.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners import cgroups
from runners.base import (
    Limits,
    OnRecord,
    Outcome,
    RecordStream,
    RunResult,
    add_sandbox_report,
    looks_out_of_memory,
)
from runners.identities import DEFAULT_UIDS, IdentityError, lease

__all__ = ["LocalRunner", "Limits", "Outcome", "RunResult", "scrubbed_env"]

# The only variables the child inherits; everything else (NUMCHECK_*, GITHUB_*, cloud
# credentials, tokens) stays out.
PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT")
# Settings that name files the job must never read; hidden in its mount namespace.
HIDDEN_SETTINGS = ("NUMCHECK_PRIVATE_KEY",)
SANDBOX_USER = "numcheck-sandbox"
FALLBACK_UID = 64999  # used as root when no user can be created (no passwd entry needed)
JAIL = Path(__file__).resolve().parent / "jail.py"
JAIL_FAILED = 125
# numcheck's own packages: what the harness imports from numcheck (see `_own_root`).
OWN_PACKAGES = ("runners", "analyzers")
# Started with `python -I` (no working directory on sys.path, no PYTHON* variables): numcheck's
# harness from where the worker imported it, never a `runners/` the PR brings along.
HARNESS_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from runners.harness import main; raise SystemExit(main())"
)
TMP_BYTES = 64 * 1024**2  # the job's private /tmp and /dev/shm, each
HEAD_BYTES = 4096  # the start of stderr, where the jail's own lines are
EXIT_GRACE = 2.0  # seconds to drain the pipes after the job's main process is gone


def scrubbed_env(home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(home),
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "TF_CPP_MIN_LOG_LEVEL": "3",
            # a training script's plots go nowhere: plt.show() returns at once
            "MPLBACKEND": "Agg",
            "CUDA_VISIBLE_DEVICES": os.environ.get("NUMCHECK_CUDA_DEVICES", ""),
        }
    )
    return env


# ---------------------------------------------------------------- what this machine allows


@dataclass(frozen=True)
class Isolation:
    """The namespaces `unshare` can create here, found once per process by trying them."""

    prefix: tuple[str, ...] = ()
    network: bool = False
    pid: bool = False
    mount: bool = False
    user_namespace: bool = False
    why_not: tuple[str, ...] = ()


_PROBED: dict[tuple[str, bool], Isolation] = {}
_PROBE_LOCK = threading.Lock()


def probe_isolation(unshare: str | None = None) -> Isolation:
    unshare = unshare or shutil.which("unshare") or "/usr/bin/unshare"
    root = os.geteuid() == 0
    with _PROBE_LOCK:
        key = (unshare, root)
        if key not in _PROBED:
            _PROBED[key] = _probe(unshare, root)
        return _PROBED[key]


def _probe(unshare: str, root: bool) -> Isolation:
    if not sys.platform.startswith("linux") or not os.access(unshare, os.X_OK):
        return Isolation(why_not=(f"no usable `unshare` ({unshare}) on {sys.platform}",))
    user = () if root else ("--user", "--map-root-user")
    full = (unshare, *user, "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc")
    net_only = (unshare, *user, "--net")
    errors = []
    for prefix, pid_mount in ((full, True), (net_only, False)):
        try:
            proc = subprocess.run(
                [*prefix, "--", "/bin/true"],
                capture_output=True,
                timeout=10,
                env={"PATH": os.environ.get("PATH", "")},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(f"{' '.join(prefix[1:])}: {exc}")
            continue
        if proc.returncode == 0:
            return Isolation(prefix, True, pid_mount, pid_mount, not root, tuple(errors))
        errors.append(
            f"unshare {' '.join(prefix[1:])}: "
            f"{proc.stderr.decode('utf-8', 'replace').strip()[-200:]}"
        )
    return Isolation(why_not=tuple(errors))


def sandbox_identity(user: str | int | None = None) -> tuple[int, int, str, list[str]]:
    """(uid, gid, name, warnings) of the unprivileged user a root worker runs jobs as: the
    configured one, else `numcheck-sandbox` (created when missing), else a bare uid."""
    wanted = SANDBOX_USER if user is None else user
    if isinstance(wanted, int):
        try:
            entry = pwd.getpwuid(wanted)
            return entry.pw_uid, entry.pw_gid, entry.pw_name, []
        except KeyError:
            return wanted, wanted, str(wanted), []
    try:
        entry = pwd.getpwnam(wanted)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [
                    useradd,
                    "--system",
                    "--user-group",
                    "--no-create-home",
                    "--home-dir",
                    "/nonexistent",
                    "--shell",
                    "/usr/sbin/nologin",
                    wanted,
                ],
                capture_output=True,
                timeout=30,
            )
        try:  # also when a concurrent worker created it first
            entry = pwd.getpwnam(wanted)
        except KeyError:
            return (
                FALLBACK_UID,
                FALLBACK_UID,
                str(FALLBACK_UID),
                [f"could not create the user {wanted!r}; jobs run as the bare uid {FALLBACK_UID}"],
            )
    if entry.pw_uid == 0:
        raise ValueError(f"the sandbox user {wanted!r} is root")
    return entry.pw_uid, entry.pw_gid, entry.pw_name, []


# ---------------------------------------------------------------- the runner


@dataclass
class LocalRunner:
    python: str | None = None  # the interpreter that runs the harness
    max_output_bytes: int | None = None  # the records stream; None: limits.output_bytes
    limits: Limits = field(default_factory=Limits)
    # as root: who jobs run as; None leases a uid per job from `uids` (runners/identities.py)
    user: str | int | None = None
    uids: range = DEFAULT_UIDS
    require_network_isolation: bool = False
    unshare: str | None = None  # path of util-linux `unshare`; "" switches namespaces off
    hide: tuple[str, ...] = ()  # more paths the job must not see (with a mount namespace)
    expose: tuple[str, ...] = ()  # more paths the job may read (libraries a minimal root lacks)
    # the job's checkout is a capped tmpfs copy the jail makes (jail.copy_onto_tmpfs); False
    # binds the host's checkout writable instead, where a test reads what the job wrote
    checkout_copy: bool = True

    def __post_init__(self) -> None:
        self.python = self.python or sys.executable
        self._output_cap = self.max_output_bytes or self.limits.output_bytes

    def run(
        self, job: dict[str, Any], timeout: float, on_record: OnRecord | None = None
    ) -> RunResult:
        nonce = secrets.token_hex(16)  # records without it were not written by the harness
        job = {**job, "nonce": nonce}
        isolation = (
            Isolation(why_not=("namespaces switched off",))
            if self.unshare == ""
            else probe_isolation(self.unshare)
        )
        report = self._report(isolation)
        if not isolation.network and self.require_network_isolation:
            return RunResult(
                "isolation-unavailable",
                [],
                "no network namespace on this "
                "machine, and this runner requires one: " + "; ".join(isolation.why_not),
                "",
                report,
            )
        root = os.geteuid() == 0
        leased = None
        identity: tuple[int, int, str, list[str]] | None = None
        if root and self.user is None:
            try:
                leased = lease(self.uids)
            except (IdentityError, OSError) as exc:
                return RunResult("isolation-unavailable", [], f"no sandbox uid: {exc}", "", report)
            _kill_uid(leased.uid)  # what a worker that died left running under this uid
            identity = (leased.uid, leased.gid, leased.name, [])
        elif root:
            identity = sandbox_identity(self.user)
        if identity is not None:
            report["user"] = identity[2]
            report["warnings"] += identity[3]
        try:
            return self._run(job, timeout, on_record, nonce, isolation, report, identity)
        finally:
            if leased is not None:
                leased.release()

    def _run(
        self,
        job: dict[str, Any],
        timeout: float,
        on_record: OnRecord | None,
        nonce: str,
        isolation: Isolation,
        report: dict[str, Any],
        identity: tuple[int, int, str, list[str]] | None,
    ) -> RunResult:
        repo = Path(job["repo"]).resolve()
        workspace = Path(tempfile.mkdtemp(prefix="numcheck-sandbox-"))
        # Where the jail mounts the job's minimal root, in its own mount namespace only: here
        # it stays an empty directory.
        new_root = Path(tempfile.mkdtemp(prefix="numcheck-root-")) if isolation.mount else None
        owners: dict[str, tuple[int, int]] = {}
        group: cgroups.JobCgroup | None = None
        try:
            if identity is not None:
                os.chown(workspace, identity[0], identity[1])
                owners = _take_ownership(repo, identity[0], identity[1])
                if not isolation.mount:
                    closed = [
                        p
                        for p in _needed_paths(
                            repo, workspace, str(self.python), _dependencies(job)
                        )
                        if not _reachable(p, identity[0], identity[1])
                    ]
                    if closed:
                        return RunResult(
                            "isolation-unavailable",
                            [],
                            "the sandbox user "
                            f"cannot reach {', '.join(closed)} and there is "
                            "no mount namespace to expose it",
                            "",
                            report,
                        )
            spec = self._spec(job, repo, workspace, identity, isolation, timeout, new_root)
            report["rlimits"] = spec["rlimits"]
            if os.geteuid() == 0:  # the job's processes together, whatever they fork
                group, why_not = cgroups.create(self.limits)
                report["warnings"] += why_not
            if group is not None:
                spec["cgroup_procs"] = group.procs_files()  # the jail joins it first thing
                report["cgroup"] = f"v{group.version}"
            jail = [sys.executable, "-I", "-S", str(JAIL), json.dumps(spec)]
            argv = [*isolation.prefix, "--", *jail] if isolation.prefix else jail
            result = self._execute(
                argv,
                job,
                nonce,
                timeout,
                on_record,
                report,
                identity[0] if identity and not isolation.pid else None,
                group,
            )
            if group is not None:  # processes killed for the job's memory, all together
                report["cgroup_oom_kills"] = group.oom_kills()
            return result
        finally:
            if group is not None:
                group.remove()
            if owners:
                _give_back(repo, owners)
            shutil.rmtree(workspace, ignore_errors=True)
            if new_root is not None:
                shutil.rmtree(new_root, ignore_errors=True)

    # ------------------------------------------------------------ pieces

    def _report(self, isolation: Isolation) -> dict[str, Any]:
        warnings = []
        if not isolation.network:
            warnings.append(
                "network isolation unavailable: the job could reach the network ("
                + "; ".join(isolation.why_not)
                + ")"
            )
        if not isolation.pid:
            warnings.append(
                "no pid namespace: processes the job leaves behind are killed by "
                "uid as root, and cannot be contained otherwise"
            )
        if not isolation.mount:
            warnings.append(
                "no mount namespace: the filesystem outside the workspace is "
                "protected by file permissions only"
            )
        return {
            "network": isolation.network,
            "pid_namespace": isolation.pid,
            "mount_namespace": isolation.mount,
            "read_only_fs": isolation.mount,
            "minimal_root": False,  # set from the jail's own line once it is built
            "user_namespace": isolation.user_namespace,
            "user": None,
            "warnings": warnings,
        }

    def _spec(
        self,
        job: dict[str, Any],
        repo: Path,
        workspace: Path,
        identity: tuple[int, int, str, list[str]] | None,
        isolation: Isolation,
        timeout: float,
        new_root: Path | None = None,
    ) -> dict[str, Any]:
        env = scrubbed_env(workspace)
        if identity is not None:
            env.update({"USER": identity[2], "LOGNAME": identity[2]})
        limits = self.limits
        memory_key = "data" if env.get("CUDA_VISIBLE_DEVICES") else "as"  # CUDA maps a lot
        rlimits = {
            memory_key: limits.memory_bytes,
            "cpu": limits.cpu_limit(timeout),
            "nproc": limits.processes,
            "fsize": limits.file_bytes,
            "nofile": limits.open_files,
            "core": 0,
        }
        if identity is None and not isolation.user_namespace:
            rlimits["nproc"] = None  # it would count the worker's own processes too
        python = str(self.python)
        needed = _needed_paths(repo, workspace, python, _dependencies(job))
        writable = [str(repo), str(workspace)]
        root = (
            None
            if new_root is None
            else {
                # the workspace (HOME, TMPDIR) is a tmpfs of its own in the minimal root, and the
                # checkout a copy on one (jail.copy_onto_tmpfs): what the job writes is capped in
                # size and files and never reaches the host's disk
                "path": str(new_root),
                "writable": [] if self.checkout_copy else [str(repo)],
                "copied": [str(repo)] if self.checkout_copy else [],
                "scratch": [str(workspace)],
                "scratch_bytes": limits.tmpfs_bytes,
                "git": [str(repo / ".git")],
                "read_only": [p for p in needed if p not in writable] + list(self.expose),
                "tmp_bytes": TMP_BYTES,
                "uid": identity[0] if identity else None,
                "gid": identity[1] if identity else None,
                "user": identity[2] if identity else None,
                "home": str(workspace),
            }
        )
        return {
            "uid": identity[0] if identity else None,
            "gid": identity[1] if identity else None,
            "mount_namespace": isolation.mount,
            "read_only": isolation.mount,
            "root": root,
            "expose": needed,
            "writable": writable,
            "hide": self._hidden(),
            "rlimits": rlimits,
            "cwd": str(workspace),
            "env": env,
            "argv": [python, "-I", "-c", HARNESS_BOOT, _own_root()],
        }

    def _hidden(self) -> list[str]:
        """What the job must not read even where file permissions would let it: the worker's
        home directory and the files its settings name (the App's private key)."""
        hidden = [os.path.expanduser("~"), *self.hide]
        for name in HIDDEN_SETTINGS:
            if os.environ.get(name):
                hidden.append(os.environ[name])
        return [os.path.realpath(p) for p in hidden if p and os.path.isabs(p)]

    def _execute(
        self,
        argv: list[str],
        job: dict[str, Any],
        nonce: str,
        timeout: float,
        on_record: OnRecord | None,
        report: dict[str, Any],
        sweep_uid: int | None,
        group: cgroups.JobCgroup | None = None,
    ) -> RunResult:
        stream = RecordStream(nonce, self._output_cap, on_record)
        tail, head = bytearray(), bytearray()  # the jail's own lines come first
        keep = self.limits.stderr_bytes
        started = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd="/",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=scrubbed_env(Path("/nonexistent")),
            start_new_session=True,
        )
        if group is not None:
            group.add(proc.pid)  # `unshare` too; the jail joins again before it runs anything
        feeder = threading.Thread(target=_feed, args=(proc, json.dumps(job).encode()), daemon=True)
        feeder.start()
        timed_out = False
        assert proc.stdout is not None and proc.stderr is not None
        selector = selectors.DefaultSelector()
        for pipe in (proc.stdout, proc.stderr):
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe, selectors.EVENT_READ)
        exited_at: float | None = None
        try:
            while selector.get_map():
                now = time.monotonic()
                if not timed_out and now - started > timeout:
                    timed_out = True
                    _kill_group(proc)
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                if exited_at is not None and now - exited_at > EXIT_GRACE:
                    break  # something of the job's still holds a pipe: stop listening
                if stream.overflow:
                    _kill_group(proc)
                for key, _ in selector.select(timeout=0.2):
                    try:
                        chunk = os.read(key.fd, 65536)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.fileobj is proc.stdout:
                        stream.feed(chunk)
                    else:
                        if len(head) < HEAD_BYTES:
                            head += chunk[: HEAD_BYTES - len(head)]
                        tail += chunk
                        del tail[:-keep]
        finally:
            selector.close()
            _kill_group(proc)  # whatever is left of the group (daemons re-parented to it)
            if group is not None:
                group.kill_all()  # and whatever left the group (setsid) but not the cgroup
            proc.wait()
            if sweep_uid is not None:
                _kill_uid(sweep_uid)
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()
        stream.close()
        stderr = tail.decode("utf-8", "replace")
        jail_lines = [
            line
            for line in head.decode("utf-8", "replace").splitlines()
            if line.startswith("numcheck-jail")
        ]
        report["warnings"] += [
            line.split(":", 1)[1].strip()
            for line in jail_lines
            if line.startswith("numcheck-jail-warning:")
        ]
        for line in jail_lines:  # how the jail entered the minimal root, where it did
            if line.startswith("numcheck-jail-root:"):
                report["minimal_root"] = line.split(":", 1)[1].strip()
        add_sandbox_report(report, stream)
        outcome, reason = self._classify(
            proc.returncode, stream, stderr, timed_out, timeout, jail_lines
        )
        return RunResult(outcome, stream.records, reason, stderr[-4000:], report)

    def _classify(
        self,
        status: int,
        stream: RecordStream,
        stderr: str,
        timed_out: bool,
        timeout: float,
        jail_lines: list[str],
    ) -> tuple[Outcome, str]:
        if timed_out:
            return "timeout", f"the sandboxed run passed its {timeout:g} s limit and was killed"
        if stream.overflow:
            return "crashed", (
                f"the harness wrote more than {self._output_cap} bytes of records and was stopped"
            )
        if status == 0 and stream.done:
            return "ok", ""
        failed = [line for line in jail_lines if line.startswith("numcheck-jail:")]
        if status == JAIL_FAILED and failed:
            return "isolation-unavailable", f"the sandbox could not be set up: {failed[0]}"
        if status in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
            cpu = self.limits.cpu_limit(timeout)
            return "timeout", f"the run used up its CPU time limit ({cpu} s)"
        if looks_out_of_memory(stderr):
            memory = self.limits.memory_bytes
            limit = f" (limit {memory // 2**20} MiB)" if memory else ""
            return "out-of-memory", f"the harness ran out of memory{limit}"
        if status < 0 or status > 128:
            number = -status if status < 0 else status - 128
            with contextlib.suppress(ValueError):
                name = signal.Signals(number).name
                if number == signal.SIGKILL:
                    return (
                        "out-of-memory",
                        "the harness was killed (SIGKILL), most likely by "
                        "the kernel's out-of-memory killer",
                    )
                return "crashed", f"the harness was killed by {name}"
        return "crashed", f"the harness exited with status {status}" + (
            "" if status else " without finishing"
        )


def _own_root() -> str:
    """Where `runners` and `analyzers` are importable from (the harness's sys.path[0])."""
    return str(Path(__file__).resolve().parent.parent)


def _dependencies(job: dict[str, Any]) -> list[Path]:
    """The declared dependencies' folder of the job (runners/dependencies.py), shown
    read-only like numcheck's own packages."""
    site = job.get("dependencies")
    return [Path(site)] if isinstance(site, str) and os.path.isabs(site) else []


def _needed_paths(
    repo: Path, workspace: Path, python: str, extra: list[Path] | None = None
) -> list[str]:
    """What the sandbox user must reach: the checkout, the workspace, numcheck's code, the
    interpreter and its installation (a venv's python is often a link into a home
    directory that is closed to other users), and `extra` (the dependencies' folder)."""
    from runners.jail import _shebang

    paths = [repo, workspace, *(Path(_own_root()) / name for name in OWN_PACKAGES), *(extra or [])]
    interpreters = [python, *_shebang(python)[:1]]  # a wrapper script: its interpreter too
    for interpreter in interpreters:
        real = Path(os.path.realpath(interpreter))
        paths += [Path(interpreter), real]
        if real == Path(os.path.realpath(sys.executable)):  # the worker's own interpreter
            paths += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
        elif (real.parent.parent / "lib").is_dir():  # another installation
            paths.append(real.parent.parent)
    unique: list[str] = []
    for path in paths:
        text = str(path) if str(path) in interpreters else os.path.realpath(path)
        if text not in unique and os.path.exists(text):
            unique.append(text)
    return unique


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(data)
    with contextlib.suppress(OSError):
        proc.stdin.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid` (the sandbox user, as root without a pid namespace),
    again until none is left, since a fork storm forks while it is being killed."""
    for _ in range(20):
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                    uids = next(line for line in handle if line.startswith("Uid:")).split()
            except (OSError, StopIteration):
                continue
            if int(uids[1]) == uid or int(uids[2]) == uid:
                found = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry), signal.SIGKILL)
        if not found:
            return
        time.sleep(0.05)


def _take_ownership(repo: Path, uid: int, gid: int) -> dict[str, tuple[int, int]]:
    """chown the checkout to the sandbox user for the run; returns who owned what."""
    owners: dict[str, tuple[int, int]] = {}
    for top, dirs, files in os.walk(repo):
        for name in [top, *(os.path.join(top, n) for n in (*dirs, *files))]:
            if name not in owners:  # a directory comes twice: in its parent, then as top
                info = os.lstat(name)
                owners[name] = (info.st_uid, info.st_gid)
                os.lchown(name, uid, gid)
    return owners


def _give_back(repo: Path, owners: dict[str, tuple[int, int]]) -> None:
    """Everything under the checkout back to its owners; what the job created goes to the
    checkout's owner."""
    default = owners.get(str(repo), (os.getuid(), os.getgid()))
    for top, dirs, files in os.walk(repo):
        for name in [top, *(os.path.join(top, n) for n in (*dirs, *files))]:
            uid, gid = owners.get(name, default)
            with contextlib.suppress(OSError):
                os.lchown(name, uid, gid)


def _reachable(path: str, uid: int, gid: int) -> bool:
    from runners.jail import _closed_parent

    try:
        return _closed_parent(path, uid, gid) is None
    except OSError:
        return False
