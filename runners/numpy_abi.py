"""Wheels compiled against NumPy 1, found without running them.

An old commit's pins resolve to releases whose compiled extensions were built against NumPy
1 (pandas 1.5.0 for a 2018 Keras). pip installs them beside numcheck's NumPy 2, since their
metadata asks only `numpy>=1.21`, and the first import then fails with `ValueError: numpy.dtype
size changed`, not an ImportError. Code that imports such a package optionally (tf_keras's
`try: import pandas`) then fails too, numcheck's own framework import first among it: one
declared package costs every finding of the repository.

An extension built against NumPy 2's headers looks for `numpy._core._multiarray_umath` and
falls back to the old name; one built against NumPy 1's names only `numpy.core._multiarray_umath`.
So the files are read, never imported: the PR chose these packages, and nothing of theirs runs
on the worker.
"""

from __future__ import annotations

import contextlib
import csv
import shutil
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

OLD_NAME = b"numpy.core._multiarray_umath"
NEW_NAME = b"numpy._core._multiarray_umath"
MAX_EXTENSION_BYTES = 256 * 2**20  # an extension larger than this is not read (kept)
REASON = (
    "its compiled extensions were built against NumPy 1, which cannot load them beside "
    "this environment's NumPy {numpy}"
)


def needs_numpy_1(extension: Path) -> bool:
    """Whether the extension module was compiled against NumPy 1's headers."""
    try:
        if extension.stat().st_size > MAX_EXTENSION_BYTES:
            return False
        data = extension.read_bytes()
    except OSError:
        return False
    return OLD_NAME in data and NEW_NAME not in data


def numpy_1_builds(site: Path, numpy_version: str | None) -> dict[str, list[Path]]:
    """{canonical distribution name: its files} for each distribution installed in `site`
    (pip's `--target` layout, one RECORD per distribution) with an extension built against
    NumPy 1, when the interpreter's NumPy is 2 or later; {} otherwise."""
    try:
        if numpy_version is None or Version(numpy_version).major < 2:
            return {}
    except InvalidVersion:
        return {}
    found: dict[str, list[Path]] = {}
    for record in sorted(site.glob("*.dist-info/RECORD")):
        files = _recorded(site, record)
        if any(f.suffix in (".so", ".pyd") and needs_numpy_1(f) for f in files):
            name = record.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0]
            found[canonicalize_name(name)] = [*files, record.parent]
    return found


def remove(site: Path, files: list[Path]) -> None:
    """Delete a distribution's files, then the folders that are left empty: an empty
    `pandas/` would import as a namespace package, and `import pandas` must fail instead."""
    root = site.resolve()
    folders: set[Path] = set()
    for path in files:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        folders.update(p for p in path.parents if p.is_relative_to(root) and p != root)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty: another distribution's files
            folder.rmdir()


def _recorded(site: Path, record: Path) -> list[Path]:
    """The files a RECORD lists, inside `site` only (a RECORD is the wheel's own text)."""
    root = site.resolve()
    files: list[Path] = []
    try:
        with record.open(encoding="utf-8", newline="") as handle:
            for row in csv.reader(handle):
                if not row:
                    continue
                path = (site / row[0]).resolve()
                if path.is_relative_to(root) and path != root and path.is_file():
                    files.append(path)
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    return files
