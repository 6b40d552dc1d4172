"""The last trusted step of `LocalRunner`: runs inside the new namespaces, still privileged,
then becomes the harness.

    unshare --net --mount --pid --fork --kill-child --mount-proc -- \\
        python -I -S runners/jail.py SPEC_JSON          # then execs the harness

In order, each step only where the spec asks for it:
1. exposes the paths the job needs (checkout, workspace, interpreter) to the sandbox user
   when a parent directory is closed to it, and hides what it must not read (the worker's
   home, the App's key file): a tmpfs over such a directory, in this private mount namespace
   only, holding bind mounts of exactly the needed paths; /dev/null over a hidden file;
2. remounts every filesystem read-only, then the checkout and the private workspace
   read-write again (bind mounts), so the job can write nowhere else;
3. sets the rlimits (address space, CPU time, processes, file size, open files, no core);
4. drops the capability bounding set, sets no_new_privs, and switches to the sandbox user;
5. forks the harness (exec, with the scrubbed environment, stdin/stdout/stderr untouched)
   and waits for it as the namespace's init, exiting with its status.

Standard library only (it starts with -I -S, before anything of the PR's can load). On any
failure it prints one line `numcheck-jail: ...` to stderr and exits with status 125.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import stat
import sys
from typing import Any

JAIL_FAILED = 125
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
# Left writable: the kernel's own filesystems (a fresh /proc comes from unshare) and /dev
# itself (/dev/null, /dev/urandom, the GPU's device nodes); /dev/shm and the rest are not.
SKIP_READONLY = ("/proc", "/sys", "/dev")
READ_ONLY_UNDER_DEV = ("/dev/shm", "/dev/mqueue")
RLIMITS = {"as": resource.RLIMIT_AS, "data": resource.RLIMIT_DATA,
           "cpu": resource.RLIMIT_CPU, "nproc": resource.RLIMIT_NPROC,
           "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE,
           "core": resource.RLIMIT_CORE}

_libc = ctypes.CDLL(None, use_errno=True)


class JailError(Exception):
    pass


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                   enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _mounts() -> list[tuple[str, int]]:
    """(mount point, per-mount flags) from /proc/self/mountinfo, parents first."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # \040 for spaces
            flags = 0
            for option in fields[5].split(","):
                flags |= OPTION_FLAGS.get(option, 0)
            found.append((point, flags))
    return found


def _flags_at(path: str, mounts: list[tuple[str, int]]) -> int:
    best, flags = "", 0
    for point, point_flags in mounts:
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, flags = point, point_flags
    return flags


def _searchable(path: str, uid: int, gid: int) -> bool:
    info = os.stat(path)
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _closed_parent(path: str, uid: int, gid: int) -> str | None:
    """The topmost directory above `path` that `uid` cannot pass through."""
    parts = path.strip("/").split("/")
    for depth in range(len(parts)):
        parent = "/" + "/".join(parts[:depth])
        if not _searchable(parent, uid, gid):
            return parent
    return None


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def expose(paths: list[str], uid: int | None, gid: int | None,
           hidden: list[str] | None = None) -> list[str]:
    """Make each path reachable at the same name while its closed parents (directories uid
    cannot pass through) and the hidden directories show nothing else: a tmpfs on each with
    bind mounts of just the needed paths. Hidden files get /dev/null bound over them.
    Returns the directories covered."""
    covered = set()
    for path in paths:
        if uid is not None and gid is not None:
            closed = _closed_parent(path, uid, gid)
            if closed is not None:
                covered.add(closed)
    hidden_files = []
    for item in hidden or []:
        if not os.path.lexists(item) or item == "/":
            continue
        if not os.path.isdir(item):
            hidden_files.append(item)
        elif not any(_inside(item, path) for path in paths):  # never hide a needed path
            covered.add(item)
    groups: dict[str, list[str]] = {}
    for top in sorted(covered, key=len):
        if not any(_inside(top, outer) for outer in groups):
            groups[top] = []  # an outer directory takes in the inner ones
    for path in paths:
        for top in groups:
            if _inside(path, top) and path != top:
                groups[top].append(path)
    for top, inside in groups.items():
        outermost: list[str] = []
        for path in sorted(set(inside), key=len):  # a path inside another comes with it
            if not any(_inside(path, other) for other in outermost):
                outermost.append(path)
        handles = [(path, os.open(path, os.O_PATH)) for path in outermost]
        _mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for path, handle in handles:  # only ever creates on the fresh tmpfs
            if os.path.isdir(f"/proc/self/fd/{handle}"):
                os.makedirs(path, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND)
            os.close(handle)
    for item in hidden_files:
        if os.path.lexists(item) and not os.path.islink(item):
            _mount("/dev/null", item, None, MS_BIND)
    return sorted(groups)


def read_only_except(writable: list[str]) -> list[str]:
    """Everything read-only but `writable`; returns the mount points left writable."""
    failed = []
    mounts = _mounts()
    for point, flags in mounts:
        skip = any(point == top or point.startswith(top + "/") for top in SKIP_READONLY)
        if skip and not point.startswith(READ_ONLY_UNDER_DEV):
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError:
            failed.append(point)
    for path in writable:
        flags = _flags_at(path, mounts) | MS_NOSUID | MS_NODEV
        _mount(path, path, None, MS_BIND)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | flags)
    return failed


def set_limits(limits: dict[str, int | None]) -> None:
    for name, value in limits.items():
        if value is None:
            continue
        hard = value + 5 if name == "cpu" else value  # SIGXCPU first, SIGKILL 5 s later
        resource.setrlimit(RLIMITS[name], (value, hard))


def drop_privileges(uid: int | None, gid: int | None) -> None:
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 and cap < 64:
        cap += 1  # stops at the first capability the kernel does not know (EINVAL)
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise JailError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if uid is not None and gid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise JailError(f"could not switch to uid {uid}")


def main(spec: dict[str, Any]) -> None:
    uid, gid = spec.get("uid"), spec.get("gid")
    if spec.get("mount_namespace"):
        expose(spec["expose"], uid, gid, spec.get("hide", []))
        if spec.get("read_only"):
            failed = read_only_except(spec["writable"])
            if "/" in failed:
                raise JailError("could not make the root filesystem read-only")
            for point in failed:
                print(f"numcheck-jail-warning: {point} stayed writable (its remount failed)",
                      file=sys.stderr, flush=True)
    argv = list(spec["argv"])
    shebang = _shebang(argv[0])
    set_limits(spec["rlimits"])
    drop_privileges(uid, gid)
    if shebang and not os.access(argv[0], os.X_OK) and os.access(argv[0], os.R_OK):
        # The worker's interpreter is a script only its owner may execute (a wrapper, a
        # test's stand-in): run it the way the kernel would, through its #! line.
        argv = [*shebang, *argv]
    os.chdir(spec["cwd"])
    os.umask(0o022)
    child = os.fork()
    if child == 0:
        os.execve(argv[0], argv, spec["env"])
    raise SystemExit(reap(child))


def reap(child: int) -> int:
    """Wait for the harness as a minimal init (in a pid namespace this process is pid 1: it
    reaps what the job orphans, and its exit tears the namespace down, daemons included),
    then exit as the harness did (128 + the signal that killed it)."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 1
        if pid == child:
            if os.WIFSIGNALED(status):
                return 128 + os.WTERMSIG(status)
            return os.WEXITSTATUS(status)


def _shebang(path: str) -> list[str]:
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    parts = first[2:].decode("utf-8", "replace").strip().split(None, 1)
    return parts


if __name__ == "__main__":
    try:
        main(json.loads(sys.argv[1]))
    except Exception as exc:  # before the harness runs; nothing of the PR's is loaded yet
        print(f"numcheck-jail: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(JAIL_FAILED) from None
