"""Which of the repository's tests a harvest runs first: those that name the flagged code.

A harvest has a minute (`harvest_seconds`), and real suites run for longer. Run in directory
order, kornia's `test/` spent its minute on augmentation and colour tests and never reached
`test_losses.py`, the one file that calls the flagged focal loss, so nothing was recorded and
the search fell back to a synthesised call in the default box. So the test files that name a
flagged function, its module, or a function or class that module defines run first, the
files naming the most of those names leading; the rest of the suite runs after them with
whatever time is left (harvest.py). A file is read as text, never imported, to be chosen.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

TEST_PATTERNS = ("test_*.py", "*_test.py")
FILES_READ = 5000  # test files read to choose from, in path order
BYTES_READ = 256 * 1024  # of each file
CHOSEN = 50  # files the first run takes
SHORTEST_NAME = 4  # shorter names (`log`, `exp`, `fn`) say nothing about a file


def test_files(repo: Path, roots: Iterable[str]) -> list[Path]:
    """The test files under `roots` (folders or files, relative to `repo`), in path order."""
    found: set[Path] = set()
    for root in roots:
        path = repo / root
        if path.is_file():
            found.add(path)
            continue
        for pattern in TEST_PATTERNS:
            found.update(p for p in path.rglob(pattern) if p.is_file())
    return sorted(found)[:FILES_READ]


def defined_names(module: ModuleType) -> set[str]:
    """The module's own name and the functions and classes it defines (not those it
    imports): what a test that exercises it has to write."""
    names = {module.__name__.rsplit(".", 1)[-1]}
    for name, value in vars(module).items():
        if (inspect.isfunction(value) or inspect.isclass(value)) and getattr(
            value, "__module__", None
        ) == module.__name__:
            names.add(name)
    return names


def tests_naming(repo: Path, roots: Iterable[str], names: Iterable[str]) -> list[str]:
    """The test files (relative to `repo`) that name any of `names` as a whole word, those
    naming the most distinct names first, at most `CHOSEN`."""
    wanted = sorted({n for n in names if len(n) >= SHORTEST_NAME and n.isidentifier()})
    if not wanted:
        return []
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, wanted)) + r")\b")
    scored: list[tuple[int, str]] = []
    for path in test_files(repo, roots):
        try:
            with path.open("rb") as handle:
                text = handle.read(BYTES_READ).decode("utf-8", "replace")
        except OSError:
            continue
        hits = set(pattern.findall(text))
        if hits:
            scored.append((-len(hits), str(path.relative_to(repo))))
    return [relative for _, relative in sorted(scored)[:CHOSEN]]
