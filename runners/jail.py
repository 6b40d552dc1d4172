"""The last trusted step of `LocalRunner`: runs inside the new namespaces, still privileged,
then becomes the harness.

    unshare --net --mount --pid --fork --kill-child --mount-proc -- \\
        python -I -S runners/jail.py SPEC_JSON          # then execs the harness

In order, each step only where the spec asks for it:
1. builds a minimal root (`build_root`) and moves into it (pivot_root; chroot where the
   kernel refuses pivot_root): a fresh tmpfs holding read-only bind mounts of only what the
   job needs (the system's /usr and library directories, a few files of /etc, the
   interpreter's installation, numcheck's own packages), the checkout (its .git hidden) and
   the private workspace read-write, a private /tmp and /dev/shm, the device nodes /dev/null,
   /dev/zero, /dev/full, /dev/random, /dev/urandom (and the GPU's, where there are some), the
   pid namespace's /proc and a read-only /sys. Nothing else of the host exists in the job's
   view: no /tmp or /var/tmp of other jobs, no /run or /var/run (the sockets of the host's
   services), no /home, /root, /srv or /var, no other checkouts;
   where no minimal root can be built (the mount namespace refuses a step), it says so on
   stderr and falls back to the host's filesystem with the directories above covered by empty
   tmpfs mounts (`expose`): the job needs reach only what it is given, the rest is hidden;
2. remounts every mount read-only but the checkout, the workspace, the private /tmp and
   /dev/shm and the device nodes;
3. sets the rlimits (address space, CPU time, processes, file size, open files, no core);
4. drops the capability bounding set, sets no_new_privs, drops the supplementary groups and
   switches to the sandbox user;
5. forks the harness (exec, with the scrubbed environment, stdin/stdout/stderr untouched)
   and waits for it as the namespace's init, exiting with its status.

Standard library only (it starts with -I -S, before anything of the PR's can load). On any
failure it prints one line `numcheck-jail: ...` to stderr and exits with status 125; what it
could not enforce but did not fail on is a line `numcheck-jail-warning: ...`.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import platform
import resource
import signal
import stat
import sys
from typing import Any

JAIL_FAILED = 125
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
MS_REC, MS_PRIVATE = 1 << 14, 1 << 18
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
OPTION_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
# Left writable: the kernel's own filesystems (a fresh /proc comes from unshare) and /dev
# itself (/dev/null, /dev/urandom, the GPU's device nodes); /dev/shm and the rest are not.
SKIP_READONLY = ("/proc", "/sys", "/dev")
READ_ONLY_UNDER_DEV = ("/dev/shm", "/dev/mqueue")
# The minimal root: what of the host it shows (each where it exists; a link stays a link).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives")
DEVICES = ("null", "zero", "full", "random", "urandom")
GPU_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri")
DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}
# Without a minimal root: the host's directories that hold other jobs' files, service sockets,
# homes and data, covered by an empty tmpfs (with the needed paths inside bound back).
HOST_HIDDEN = (
    "/tmp",
    "/var/tmp",
    "/run",
    "/var/run",
    "/home",
    "/root",
    "/srv",
    "/mnt",
    "/media",
    "/var/lib",
    "/var/spool",
    "/var/mail",
    "/var/backups",
    "/dev/shm",
)
NO_MINIMAL_ROOT = "no minimal root"
RLIMITS = {
    "as": resource.RLIMIT_AS,
    "data": resource.RLIMIT_DATA,
    "cpu": resource.RLIMIT_CPU,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}

_libc = ctypes.CDLL(None, use_errno=True)


class JailError(Exception):
    pass


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
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


def expose(
    paths: list[str], uid: int | None, gid: int | None, hidden: list[str] | None = None
) -> list[str]:
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


def _bind(source: str, target: str, *, recursive: bool = True) -> None:
    """Bind `source` at `target` (created on the new root's tmpfs where missing: a directory
    for a directory, an empty file for anything else)."""
    if os.path.isdir(source):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        if not os.path.lexists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    _mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))


def _place(source: str, new: str) -> str | None:
    """Show `source` at the same path under the new root `new`: a link as the same link,
    anything else as a bind mount. Returns the mount point, or None for a link."""
    target = new + source
    if os.path.islink(source):
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(source), target)
        return None
    _bind(source, target)
    return source


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o644)


def _etc(new: str, root: dict[str, Any]) -> None:
    """A few files of /etc: the dynamic loader's, the time zone; passwd, group, hosts and
    nsswitch.conf written for the job (no host accounts)."""
    for name in ETC:
        if os.path.lexists(f"/etc/{name}"):
            _place(f"/etc/{name}", new)
    uid, gid = root.get("uid"), root.get("gid")
    user, home = root.get("user") or "sandbox", root.get("home") or "/"
    passwd = ["root:x:0:0:root:/:/usr/sbin/nologin"]
    group = ["root:x:0:"]
    if uid not in (None, 0):
        passwd.append(f"{user}:x:{uid}:{gid}:{user}:{home}:/usr/sbin/nologin")
        group.append(f"{user}:x:{gid}:")
    passwd.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    group.append("nogroup:x:65534:")
    _write(f"{new}/etc/passwd", "\n".join(passwd) + "\n")
    _write(f"{new}/etc/group", "\n".join(group) + "\n")
    _write(f"{new}/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n")
    _write(f"{new}/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n")


def _dev(new: str, tmp_bytes: int) -> list[str]:
    """A /dev of the ordinary device nodes (and the GPU's), a private /dev/shm; returns the
    mount points that stay writable."""
    os.makedirs(f"{new}/dev", mode=0o755)
    _mount("tmpfs", f"{new}/dev", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k")
    writable = []
    nodes = [f"/dev/{name}" for name in DEVICES]
    for pattern in GPU_DEVICES:
        nodes += sorted(glob.glob(pattern))
    for node in nodes:
        if os.path.exists(node) and not os.path.islink(node):
            _bind(node, new + node)
            writable.append(node)
    for name, link in DEV_LINKS.items():
        os.symlink(link, f"{new}/dev/{name}")
    os.makedirs(f"{new}/dev/shm", mode=0o1777)
    _mount("tmpfs", f"{new}/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={tmp_bytes}")
    return [*writable, "/dev/shm"]


def _cover(new: str, hidden: list[str], shown: list[str]) -> None:
    """Hide what lies inside a shown tree but must not be read (the worker's home or key file
    inside a bound directory): an empty tmpfs over a directory, /dev/null over a file."""
    for item in hidden:
        target = new + item
        if not any(_inside(item, path) and item != path for path in shown):
            continue  # not inside anything shown: absent from the new root already
        if any(_inside(path, item) for path in shown) or not os.path.lexists(target):
            continue  # never hide a needed path
        if os.path.islink(target):
            continue
        if os.path.isdir(target):
            _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755,size=4k")
        else:
            _mount("/dev/null", target, None, MS_BIND)


SCRATCH_INODES = 65536  # files and directories the job's workspace may hold
PAGE = 4096  # what one file takes on a tmpfs at least


def build_root(root: dict[str, Any], hidden: list[str]) -> list[str]:
    """The job's whole filesystem, on a tmpfs at root["path"] (an empty directory the runner
    made): see the module's docstring. Returns the mount points (paths as the job will see
    them) that stay writable; everything else is made read-only after the move (`seal`)."""
    new = root["path"].rstrip("/")
    tmp_bytes = int(root.get("tmp_bytes") or 64 * 1024**2)
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    shown: list[str] = []
    for path in SYSTEM:
        if os.path.lexists(path):
            point = _place(path, new)
            shown += [point] if point else []
    _etc(new, root)
    writable = _dev(new, tmp_bytes)
    _bind("/proc", f"{new}/proc")  # the pid namespace's own (unshare --mount-proc)
    if os.path.isdir("/sys"):
        _bind("/sys", f"{new}/sys")
    os.makedirs(f"{new}/tmp", mode=0o1777, exist_ok=True)
    _mount("tmpfs", f"{new}/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={tmp_bytes}")
    writable.append("/tmp")
    outermost: list[str] = []  # a path inside another comes with it
    for path in sorted({os.path.normpath(p) for p in root["read_only"]}, key=len):
        if os.path.lexists(path) and not any(_inside(path, o) for o in [*outermost, *shown]):
            outermost.append(path)
    for path in outermost:
        if os.path.islink(path):  # an interpreter given as a link: the link, and its target
            _place(path, new)
        else:
            shown.append(_bind_same(path, new))
    for path in root["writable"]:
        shown.append(_bind_same(path, new))
        writable.append(path)
    for path in root.get("copied", []):  # the checkout: a copy on a capped tmpfs
        copy_onto_tmpfs(path, new + path, root)
        shown.append(path)
        writable.append(path)
    for path in root.get("scratch", []):  # the workspace: a size- and file-capped tmpfs, not
        os.makedirs(new + path, mode=0o700, exist_ok=True)  # the host's disk
        owner = "" if root.get("uid") is None else f",uid={root['uid']},gid={root['gid']}"
        _mount(
            "tmpfs",
            new + path,
            "tmpfs",
            MS_NOSUID | MS_NODEV,
            f"mode=0700,size={int(root['scratch_bytes'])},nr_inodes={SCRATCH_INODES}{owner}",
        )
        shown.append(path)
        writable.append(path)
    for git in root.get("git", []):  # the checkout's own repository: remotes, tokens, history
        target = new + git
        if os.path.isdir(target) and not os.path.islink(target):
            _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755,size=4k")
        elif os.path.lexists(target) and not os.path.islink(target):
            _mount("/dev/null", target, None, MS_BIND)
    _cover(new, hidden, shown)
    return writable


def copy_onto_tmpfs(source: str, target: str, root: dict[str, Any]) -> None:
    """The checkout, copied onto a tmpfs of its own size plus the workspace's cap: the job may
    write in its checkout as in a clone (build outputs, checkpoints), but what it writes is
    capped in bytes and files, never reaches the host's disk, and never changes the host's
    copy. Its `.git` is left out (remotes, tokens, history)."""
    entries = list(_tree(source))
    size = sum(-(-max(st.st_size, 1) // PAGE) * PAGE for _, st in entries)
    os.makedirs(target, mode=0o755, exist_ok=True)
    uid, gid = root.get("uid"), root.get("gid")
    owner = "" if uid is None else f",uid={uid},gid={gid}"
    _mount(
        "tmpfs",
        target,
        "tmpfs",
        MS_NOSUID | MS_NODEV,
        f"mode=0755,size={size + int(root['scratch_bytes'])},"
        f"nr_inodes={len(entries) + SCRATCH_INODES}{owner}",
    )
    for rel, st in entries:
        src, dst = os.path.join(source, rel), os.path.join(target, rel)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(dst, 0o700)
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), dst)
        else:
            with open(src, "rb") as reading, open(dst, "xb") as writing:
                while chunk := reading.read(1 << 20):
                    writing.write(chunk)
        if uid is not None:
            os.lchown(dst, int(uid), int(gid or 0))
        if not stat.S_ISLNK(st.st_mode):
            os.chmod(
                dst,
                stat.S_IMODE(st.st_mode)
                | stat.S_IRUSR
                | stat.S_IWUSR
                | (stat.S_IXUSR if stat.S_ISDIR(st.st_mode) else 0),
            )


def _tree(top: str) -> Any:
    """(relative path, lstat) of the directories, regular files and links under `top`,
    parents first, its `.git` left out; links are not followed."""
    pending = [""]
    while pending:
        folder = pending.pop()
        with os.scandir(os.path.join(top, folder)) as listing:
            for item in listing:
                rel = os.path.join(folder, item.name)
                if not folder and item.name == ".git":
                    continue
                st = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    yield rel, st
                    pending.append(rel)
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    yield rel, st


def _bind_same(path: str, new: str) -> str:
    _bind(path, new + path)
    return path


def enter_root(path: str) -> str:
    """Make `path` the root: pivot_root, the old root detached ("pivot_root"); where the
    kernel refuses (a root on rootfs, an unknown architecture), chroot ("chroot": the old
    mounts stay in this namespace, unreachable once the capabilities are gone)."""
    os.chdir(path)
    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is not None and _libc.syscall(number, b".", b".") == 0:
        if _libc.umount2(b".", MNT_DETACH) != 0:  # the old root must not stay in view
            raise JailError(f"umount of the old root: {os.strerror(ctypes.get_errno())}")
        os.chdir("/")
        return "pivot_root"
    os.chroot(".")
    os.chdir("/")
    return "chroot"


def seal(writable: list[str]) -> None:
    """Every mount of the (new) root read-only but `writable` and the pid namespace's /proc;
    the writable ones nosuid, and nodev but for the device nodes themselves."""
    keep = set(writable)
    for point, flags in _mounts():
        if point == "/proc" or point.startswith("/proc/"):
            continue
        if point in keep:
            device = point.startswith("/dev/") and point != "/dev/shm"
            flags |= MS_NOSUID | (0 if device else MS_NODEV)
            _mount(None, point, None, MS_REMOUNT | MS_BIND | flags)
        else:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


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
        os.setgroups([])  # none of root's supplementary groups
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise JailError(f"could not switch to uid {uid}")
        if os.getgroups() not in ([], [gid]):
            raise JailError(f"could not drop the supplementary groups {os.getgroups()}")
        return
    try:  # the worker's own uid (a user namespace): its groups go where the kernel allows it
        os.setgroups([])
    except OSError:
        if [g for g in os.getgroups() if g != os.getgid()]:
            _warn(
                "the job keeps the worker's supplementary groups (a user namespace may not "
                "drop them); only what the job's view of the filesystem shows is reachable "
                "through them"
            )


def _warn(text: str) -> None:
    print(f"numcheck-jail-warning: {text}", file=sys.stderr, flush=True)


def _isolate_filesystem(spec: dict[str, Any], uid: int | None, gid: int | None) -> None:
    """The minimal root where it can be built, else the host's filesystem with its other
    jobs', services' and users' directories covered; read-only but the job's own places."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    hidden = list(spec.get("hide", []))
    root = spec.get("root")
    if root:
        try:
            writable = build_root(root, hidden)
            entered = enter_root(root["path"])
        except OSError as exc:
            os.chdir("/")
            _libc.umount2(os.fsencode(root["path"]), MNT_DETACH)
            _warn(
                f"{NO_MINIMAL_ROOT} ({exc}): the job sees the host's filesystem read-only, "
                f"with {', '.join(HOST_HIDDEN)} and the checkout's .git covered"
            )
        else:
            seal(writable)
            print(f"numcheck-jail-root: {entered}", file=sys.stderr, flush=True)
            return
    covered = sorted({os.path.realpath(p) for p in HOST_HIDDEN if os.path.lexists(p)})
    tops = expose(spec["expose"], uid, gid, [*hidden, *covered])
    if spec.get("read_only"):
        failed = read_only_except(spec["writable"])
        if "/" in failed:
            raise JailError("could not make the root filesystem read-only")
        for point in failed:  # one under a covered directory is out of the job's view
            if not any(_inside(point, top) and point != top for top in tops):
                _warn(f"{point} stayed writable (its remount failed)")
    for git in (root or {}).get("git", []):
        if os.path.isdir(git) and not os.path.islink(git):
            _mount("tmpfs", git, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755,size=4k")
        elif os.path.lexists(git) and not os.path.islink(git):
            _mount("/dev/null", git, None, MS_BIND)


def join_cgroup(procs_files: list[str]) -> None:
    """Move this process (and so all it will start) into the job's cgroup, before anything
    of the job runs; the runner made the cgroup and set its limits."""
    for procs in procs_files:
        try:
            with open(procs, "w", encoding="ascii") as handle:
                handle.write("0")
        except OSError as exc:
            raise JailError(f"could not join the job's cgroup {procs}: {exc}") from exc


def main(spec: dict[str, Any]) -> None:
    join_cgroup(spec.get("cgroup_procs", []))
    uid, gid = spec.get("uid"), spec.get("gid")
    argv = list(spec["argv"])
    shebang = _shebang(argv[0])  # read before the root changes
    if spec.get("mount_namespace"):
        _isolate_filesystem(spec, uid, gid)
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
