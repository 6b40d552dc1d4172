"""Absolute imports of a module's own siblings: code written to run from its own folder.

optax's `losses/segmentation.py` (as its PR had it) says `from classification import
sigmoid_binary_cross_entropy`, and `classification.py` sits next to it: the import works for
whoever runs a script or the tests from that folder (Python puts a script's folder first on
`sys.path`), and research code does the same with `from utils import ...`. Imported by its
package name, the module misses `classification`, and a stand-in for it (standins.py) only
moves the failure to the first call (`'sigmoid_binary_cross_entropy' object` in arithmetic).

So before standing in for a missing top-level module, loading.py asks `sibling_folder`
whether a folder of the checkout along the failing import holds it: the folder of a checkout
file in the import's traceback, innermost first. That folder goes on `sys.path`, last, so it
never shadows an installed package or the standard library, only provides what nothing else
did. The reproducer appends the same folders (`script_dirs` in its plan, relative to the
repository root, where it is saved) and says why.

No torch here: the host checks a plan's folders with `checked_dir`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath

MAX_DIRS = 4  # sibling folders one job may add
_ADDED: list[str] = []  # relative folders this process appended, in order
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def sibling_folder(name: str, exc: BaseException, repo_dir: Path) -> str | None:
    """The checkout folder (relative POSIX path, never its root) that holds the missing
    top-level module `name` beside a checkout file the failing import ran through, or None."""
    if "." in name or len(_ADDED) >= MAX_DIRS:
        return None
    root = repo_dir.resolve()
    files: list[Path] = []
    traceback = exc.__traceback__
    while traceback is not None:
        filename = traceback.tb_frame.f_code.co_filename
        if not filename.startswith("<"):  # not `<frozen importlib._bootstrap>`
            files.insert(0, Path(filename))  # innermost first
        traceback = traceback.tb_next
    resolved: list[Path] = []
    for file in files:
        try:
            resolved.append(file.parent.resolve() / file.name)  # its folder, links followed
        except OSError:  # that file's folder is skipped, as any folder that cannot be read
            continue
    for folder in [file.parent for file in resolved]:
        if folder == root or not folder.is_relative_to(root):
            continue
        # allennlp's common/tqdm.py says `from tqdm import tqdm`: a file that imports its own
        # name means the library of that name (imports are absolute), never itself
        if (folder / f"{name}.py") in resolved:
            continue
        if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file():
            return folder.relative_to(root).as_posix()
    return None


def append(repo_dir: Path, relative: str) -> None:
    """`relative` (a folder of the checkout) last on `sys.path`, remembered for the plan."""
    folder = str(repo_dir.resolve() / relative)
    if folder not in sys.path:
        sys.path.append(folder)
    if relative not in _ADDED:
        _ADDED.append(relative)


def added() -> tuple[str, ...]:
    """The folders this process appended, in order."""
    return tuple(_ADDED)


def checked_dir(value: object) -> str | None:
    """A plan's folder as a clean relative POSIX path (plain names, no `..`, not the root),
    or None: what a reproducer may put on its `sys.path`."""
    if not isinstance(value, str) or not value or len(value) > 200:
        return None
    pure = PurePosixPath(value)
    if (
        pure.is_absolute()
        or pure.as_posix() != value
        or not all(_PART.match(p) and p not in (".", "..") for p in pure.parts)
    ):
        return None
    return value
