"""The seccomp filter's program (runners/seccomp.py), run by a small interpreter of the four
classic-BPF instructions it uses: for each machine it supports, which syscalls pass and which
fail with which errno. Where this machine allows it, the filter is also installed in a child
process and asked for real sockets."""

from __future__ import annotations

import errno
import platform
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from runners.seccomp import (
    ARCHES,
    JEQ_K,
    JGE_K,
    LD_W_ABS,
    RET_K,
    SECCOMP_RET_ALLOW,
    SECCOMP_RET_ERRNO,
    program,
)

ROOT = Path(__file__).resolve().parent.parent


def run(machine: str, arch: int, nr: int, arg0: int = 0) -> int:
    """What the filter returns for one syscall (struct seccomp_data, little-endian)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    accumulator, pc, code = 0, 0, program(machine)
    for _ in range(len(code) + 1):
        op, jt, jf, k = code[pc]
        if op == LD_W_ABS:
            accumulator = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif op == JEQ_K:
            pc += 1 + (jt if accumulator == k else jf)
        elif op == JGE_K:
            pc += 1 + (jt if accumulator >= k else jf)
        elif op == RET_K:
            return k
        else:
            raise AssertionError(f"unknown instruction {op:#x}")
    raise AssertionError("the program did not return")


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_only_unix_sockets_are_allowed(machine: str) -> None:
    arch, socket_nr, io_uring_nr = ARCHES[machine]
    refused = SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT
    assert run(machine, arch, socket_nr, 1) == SECCOMP_RET_ALLOW  # AF_UNIX
    for family in (2, 10, 16, 17, 40):  # INET, INET6, NETLINK, PACKET, VSOCK
        assert run(machine, arch, socket_nr, family) == refused, family
    # the family is an int: high bits in the register do not turn INET into UNIX
    assert run(machine, arch, socket_nr, (1 << 32) | 2) == refused


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_io_uring_and_foreign_abis_fail_and_the_rest_passes(machine: str) -> None:
    arch, socket_nr, io_uring_nr = ARCHES[machine]
    assert run(machine, arch, io_uring_nr) == SECCOMP_RET_ERRNO | errno.ENOSYS
    assert run(machine, arch, 0x40000000 | socket_nr, 2) == SECCOMP_RET_ERRNO | errno.EPERM
    other = next(a for m, (a, _, _) in ARCHES.items() if m != machine)
    assert run(machine, other, socket_nr, 2) == SECCOMP_RET_ERRNO | errno.EPERM
    assert run(machine, 0x40000003, 102) == SECCOMP_RET_ERRNO | errno.EPERM  # i386 socketcall
    for nr in (0, 1, 3, 57, 59, 231, 257):  # read, write, close, fork, execve, exit, openat
        if nr not in (socket_nr, io_uring_nr):
            assert run(machine, arch, nr, 2) == SECCOMP_RET_ALLOW, nr


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() not in ARCHES,
    reason="the filter exists for Linux on x86-64 and arm64 only",
)
def test_installed_in_a_child_it_holds_for_its_children_too() -> None:
    script = (
        "import os, socket, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from runners.seccomp import install\n"
        "why = install()\n"
        "if why: print('skip', why); raise SystemExit(0)\n"
        "def refused(family, kind):\n"
        "    try:\n"
        "        socket.socket(family, kind).close()\n"
        "    except OSError as exc:\n"
        "        return exc.errno\n"
        "    return 'opened'\n"
        "a, b = socket.socketpair(); a.send(b'x')\n"
        "print(refused(socket.AF_INET, socket.SOCK_STREAM), b.recv(1).decode())\n"
        "sys.stdout.flush()\n"
        "if os.fork() == 0:\n"
        "    print(refused(socket.AF_INET6, socket.SOCK_DGRAM)); sys.stdout.flush()\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    if done.stdout.startswith("skip"):
        pytest.skip(done.stdout)
    assert done.stdout.split() == [str(errno.EAFNOSUPPORT), "x", str(errno.EAFNOSUPPORT)]


def test_the_runner_reports_what_the_supervisor_said() -> None:
    """The supervisor's first record says whether the filter holds; only a record with the
    job's nonce counts, and a harness that never spoke is not reported as filtered."""
    import json

    from runners.base import RecordStream, add_sandbox_report

    def report(*lines: dict[str, object]) -> dict[str, object]:
        stream = RecordStream("n0nce", 1 << 20)
        stream.feed(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        got: dict[str, object] = {"warnings": []}
        add_sandbox_report(got, stream)
        return got

    held = report({"sandbox": {"seccomp": True, "why": None}, "nonce": "n0nce"})
    assert held == {"seccomp": True, "warnings": []}
    refused = report({"sandbox": {"seccomp": False, "why": "EINVAL"}, "nonce": "n0nce"})
    assert refused["seccomp"] is False and "EINVAL" in str(refused["warnings"])
    forged = report({"sandbox": {"seccomp": True}, "nonce": "guess"})
    assert forged == {"seccomp": False, "warnings": []}
