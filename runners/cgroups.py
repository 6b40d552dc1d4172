"""One cgroup per local job: memory, processes and CPU limited for the job as a whole.

rlimits bind one process at a time (four children at 2 GiB each passed an "8 GiB" limit) and
RLIMIT_NPROC binds a uid. A cgroup holds every process of the job, whatever it forks and
wherever it moves itself in the process tree: memory (with no swap on top where the kernel
accounts swap), the number of processes, and a CPU quota; the runner kills what is left in it
when the run ends and removes it. cgroup v1 (one hierarchy per controller, as on this
project's machines) and v2 (the unified hierarchy) are both handled; where neither can be
written (not root, a read-only /sys/fs/cgroup, no controller) the job runs with its rlimits
alone and `isolation` says so.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from runners.base import Limits

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


@dataclass
class JobCgroup:
    version: int
    paths: list[Path] = field(default_factory=list)  # v1: one per controller; v2: one

    def procs_files(self) -> list[str]:
        return [str(path / "cgroup.procs") for path in self.paths]

    def add(self, pid: int) -> None:
        for procs in self.procs_files():
            with contextlib.suppress(OSError):
                Path(procs).write_text(str(pid))

    def oom_kills(self) -> int:
        """How many processes the kernel killed for the job's memory limit."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        for path in self.paths:
            with contextlib.suppress(OSError):
                for line in (path / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0

    def kill_all(self) -> None:
        """SIGKILL every process left in the cgroup, again until none is (a fork storm forks
        while it is being killed)."""
        if self.version == 2 and (self.paths[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.paths[0] / "cgroup.kill").write_text("1")
        for _ in range(50):
            left = set()
            for procs in self.procs_files():
                with contextlib.suppress(OSError):
                    left |= {int(p) for p in Path(procs).read_text().split()}
            if not left:
                return
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> None:
        self.kill_all()
        for path in self.paths:
            for _ in range(50):  # the kernel frees a cgroup once its last task is reaped
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _own(controller: str) -> Path | None:
    """This process's cgroup directory for a v1 controller ('' for v2), where it is mounted."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller in names.split(",")) if controller else names == "":
            base = ROOT / controller if controller else ROOT
            if controller == "" and not (base / "cgroup.controllers").exists():
                base = ROOT / "unified"
            return base / path.lstrip("/")
    return None


def create(limits: Limits) -> tuple[JobCgroup | None, list[str]]:
    """A fresh cgroup for one job with the limits set, or None and why not."""
    name = f"numcheck-job-{secrets.token_hex(6)}"
    try:
        memory = _own("memory")
        if memory is not None and memory.is_dir():
            return _create_v1(name, limits), []
        return _create_v2(name, limits), []
    except (OSError, ValueError) as exc:
        return None, [
            f"no cgroup for the job ({type(exc).__name__}: {exc}): its memory and "
            "processes are limited per process and per uid only"
        ]


def _create_v1(name: str, limits: Limits) -> JobCgroup:
    group = JobCgroup(1)
    try:
        for controller in CONTROLLERS:
            parent = _own(controller)
            if parent is None or not parent.is_dir():
                if controller == "memory":
                    raise ValueError("no memory controller mounted")
                continue
            path = parent / name
            path.mkdir()
            group.paths.append(path)
            if controller == "memory" and limits.memory_bytes is not None:
                (path / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
                with contextlib.suppress(OSError):  # swap accounting may be off
                    (path / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
            elif controller == "pids" and limits.processes is not None:
                (path / "pids.max").write_text(str(limits.processes))
            elif controller == "cpu" and limits.cpus is not None:
                (path / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                (path / "cpu.cfs_quota_us").write_text(str(int(limits.cpus * CPU_PERIOD_US)))
    except BaseException:
        group.remove()
        raise
    return group


def _create_v2(name: str, limits: Limits) -> JobCgroup:
    parent = _own("")
    if parent is None or not (parent / "cgroup.controllers").exists():
        raise ValueError("no cgroup v2 hierarchy")
    available = set((parent / "cgroup.subtree_control").read_text().split())
    missing = {"memory", "pids"} - available
    if missing:
        raise ValueError(f"the controllers {sorted(missing)} are not delegated to {parent}")
    path = parent / name
    path.mkdir()
    group = JobCgroup(2, [path])
    try:
        if limits.memory_bytes is not None:
            (path / "memory.max").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")
        if limits.processes is not None:
            (path / "pids.max").write_text(str(limits.processes))
        if limits.cpus is not None and "cpu" in available:
            (path / "cpu.max").write_text(f"{int(limits.cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
    except BaseException:
        group.remove()
        raise
    return group
