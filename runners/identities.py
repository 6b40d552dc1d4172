"""A uid of its own for every concurrent job of the local runner (as root).

One shared sandbox user let concurrent jobs read each other's checkouts, share one process
quota (RLIMIT_NPROC counts per uid: one job's fork storm kept another from starting), and made
the post-run sweep of the user's processes kill another job's. So a root worker leases a uid
per job from a range (`NUMCHECK_SANDBOX_UIDS`, default 640000-640255, ids no account uses),
with its own gid and no supplementary groups; the lease is an exclusive `flock` on a file
named after the uid in a directory only root may write, held for the whole run and dropped by
the kernel if the worker dies, so a crashed worker never leaks a uid. A uid taken from the
pool may still own processes a worker left behind without a pid namespace: they are killed
before the uid is used again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_UIDS = range(640000, 640256)
WAIT_SECONDS = 60.0  # for a free uid when every one is leased


class IdentityError(Exception):
    """No uid could be leased (the range is exhausted, or the lock directory is unsafe)."""


@dataclass
class Lease:
    uid: int
    gid: int
    fd: int

    @property
    def name(self) -> str:
        return f"numcheck-{self.uid}"

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def uid_range(text: str) -> range:
    """`640000-640255` (inclusive) as a range; a uid below 1000 or 0 is refused."""
    low, sep, high = text.strip().partition("-")
    try:
        first, last = int(low), int(high if sep else low)
    except ValueError:
        raise ValueError(
            f"NUMCHECK_SANDBOX_UIDS={text!r}: expected FIRST-LAST, such as 640000-640255"
        ) from None
    if first < 1000 or last < first:
        raise ValueError(
            f"NUMCHECK_SANDBOX_UIDS={text!r}: the range must start at 1000 or "
            "above and not be empty"
        )
    return range(first, last + 1)


def lock_dir() -> Path:
    """Where the leases live: /run/numcheck-uids when /run is there, else in the temporary
    directory; created 0700 and refused when someone else could write it."""
    base = Path("/run") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir())
    path = base / "numcheck-uids"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise IdentityError(
            f"{path} is not a directory only this worker's user may write; remove it"
        )
    return path


def lease(uids: range, directory: Path | None = None, wait: float = WAIT_SECONDS) -> Lease:
    """The first uid of `uids` no running job holds, waiting up to `wait` seconds."""
    directory = directory or lock_dir()
    deadline = time.monotonic() + wait
    while True:
        for uid in uids:
            fd = os.open(directory / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return Lease(uid, uid, fd)
        if time.monotonic() > deadline:
            raise IdentityError(
                f"every sandbox uid ({uids.start}-{uids.stop - 1}) is held by "
                f"a running job; waited {wait:g} s"
            )
        time.sleep(0.2)
