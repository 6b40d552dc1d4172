"""Leases of a uid per job (runners/identities.py): distinct while held, free again when
released or when the holder dies, and a clear error when the range is used up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runners.identities import IdentityError, lease, uid_range


def test_concurrent_leases_get_distinct_uids_and_free_them(tmp_path: Path) -> None:
    uids = range(700000, 700002)
    first, second = lease(uids, tmp_path), lease(uids, tmp_path)
    assert {first.uid, second.uid} == {700000, 700001}
    assert first.gid == first.uid and first.name == f"numcheck-{first.uid}"
    with pytest.raises(IdentityError, match="held by a running job"):
        lease(uids, tmp_path, wait=0)
    first.release()
    assert lease(uids, tmp_path, wait=0).uid == first.uid
    second.release()


def test_a_dead_holder_frees_its_uid(tmp_path: Path) -> None:
    """The lease is a flock: a worker killed mid-run leaks nothing."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from runners.identities import lease; "
            "l = lease(range(700010, 700011), __import__('pathlib').Path(sys.argv[1])); "
            "print(l.uid, flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "700010"
    with pytest.raises(IdentityError):
        lease(range(700010, 700011), tmp_path, wait=0)
    holder.kill()
    holder.wait()
    assert lease(range(700010, 700011), tmp_path, wait=0).uid == 700010


def test_the_range_setting() -> None:
    assert uid_range("640000-640255") == range(640000, 640256)
    assert uid_range(" 700000 ") == range(700000, 700001)
    for bad in ("0-10", "abc", "700010-700000"):
        with pytest.raises(ValueError, match="NUMCHECK_SANDBOX_UIDS"):
            uid_range(bad)
