"""Wheels and source archives built in a test's tmp_path: a package index on disk for
`runners/dependencies.py` (NUMCHECK_PACKAGE_INDEX=<folder>), so the tests run real pip with
no network."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path


def make_wheel(folder: Path, name: str, version: str, files: Mapping[str, str],
               requires: Iterable[str] = ()) -> Path:
    """A pure-Python wheel with a valid RECORD, as a build backend would write it."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name.replace('-', '_')}-{version}"
    wheel = folder / f"{dist}-py3-none-any.whl"
    contents = dict(files)
    contents[f"{dist}.dist-info/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires))
    contents[f"{dist}.dist-info/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: numcheck-tests\n"
                                           "Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = []
    for path, text in contents.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    contents[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return wheel


def make_sdist(folder: Path, name: str, version: str, setup_py: str) -> Path:
    """A source archive whose setup.py would run if pip ever built it."""
    folder.mkdir(parents=True, exist_ok=True)
    sdist = folder / f"{name}-{version}.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for path, text in ((f"{name}-{version}/setup.py", setup_py),
                           (f"{name}-{version}/PKG-INFO",
                            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")):
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return sdist
