"""A second wall around the PR's code: a seccomp filter that refuses every socket but AF_UNIX.

The first wall is the job's network namespace (local runner) or `--network none` (Docker):
there is no interface to reach anything through. But a namespace the kernel could not give,
or a runner an operator set up differently, would leave `socket(AF_INET, ...)` open to the
PR's code; and netlink, packet or vsock sockets talk to the kernel and the host, not to a
network. So the harness's supervisor installs this filter on itself before it starts the
worker, and every process of the job inherits it (the filter cannot be removed, and
`no_new_privs` keeps a set-uid program from shedding it):

- `socket()` of any family but AF_UNIX fails with EAFNOSUPPORT (what a kernel without that
  family says), so the PR's code sees an ordinary error; AF_UNIX stays, for
  `multiprocessing`, DataLoader workers and the harness's own pipes;
- `io_uring_setup` fails with ENOSYS: io_uring can open sockets without calling `socket()`;
- a syscall of another ABI (x32 numbers, or i386 through `int 0x80` on x86-64) fails with
  EPERM, since the filter's syscall numbers are the native ones.

Only the standard library (ctypes): the supervisor imports nothing else. Linux on x86-64 and
arm64 only; elsewhere `install` says why not and the run goes on behind the first wall.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
AF_UNIX = 1
X32_SYSCALL_BIT = 0x40000000

# machine -> (AUDIT_ARCH_*, socket's syscall number, io_uring_setup's)
ARCHES = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}

# classic BPF over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6];}
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K
NR, ARCH, ARG0 = 0, 4, 16  # offsets; the low 32 bits of args[0] on a little-endian machine


class SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter for `machine`, as (code, jt, jf, k) instructions; jumps count the
    instructions skipped after the one jumping."""
    arch, socket_nr, io_uring_nr = ARCHES[machine]
    return [
        (LD_W_ABS, 0, 0, ARCH),  # 0
        (JEQ_K, 0, 8, arch),  # 1: another ABI -> 10
        (LD_W_ABS, 0, 0, NR),  # 2
        (JGE_K, 6, 0, X32_SYSCALL_BIT),  # 3: x32 numbers -> 10
        (JEQ_K, 6, 0, io_uring_nr),  # 4: io_uring_setup -> 11
        (JEQ_K, 0, 3, socket_nr),  # 5: not socket() -> 9
        (LD_W_ABS, 0, 0, ARG0),  # 6: the family
        (JEQ_K, 1, 0, AF_UNIX),  # 7: AF_UNIX -> 9
        (RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT),  # 8
        (RET_K, 0, 0, SECCOMP_RET_ALLOW),  # 9
        (RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),  # 10
        (RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),  # 11
    ]


def install() -> str | None:
    """Install the filter on this process (and so on everything it starts): None when it
    holds, else why it could not be installed."""
    machine = platform.machine()
    if platform.system() != "Linux" or machine not in ARCHES:
        return f"no seccomp filter for {platform.system()} on {machine}"
    if struct.pack("=I", 1) != struct.pack("<I", 1):
        return "no seccomp filter on a big-endian machine"
    instructions = program(machine)
    filters = (SockFilter * len(instructions))(*[SockFilter(*i) for i in instructions])
    fprog = SockFprog(len(instructions), filters)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError) as exc:
        return f"prctl is not available: {exc}"
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {errno.errorcode.get(ctypes.get_errno())}"
    if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        return (
            f"prctl(PR_SET_SECCOMP) failed: {errno.errorcode.get(ctypes.get_errno())} "
            "(a kernel without CONFIG_SECCOMP_FILTER, or a container that forbids it)"
        )
    return None
