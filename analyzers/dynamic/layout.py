"""Where a checkout's importable packages live: the repository root, or a source folder.

Many libraries keep their package under `src/` (`src/torchmetrics/functional/x.py` is
`torchmetrics.functional.x`), installed with `pip install -e .` so `import torchmetrics` finds
it. The dynamic pass never installs the checkout, so it has to know those folders itself: the
module name of a flagged file, what goes on `sys.path` in the sandbox, and where a reproducer
finds the file all come from here.

A source root is read, never run: the `src/` convention (a `src` folder that is not itself
a package and holds one), and what the packaging files declare as static data
(`pyproject.toml`'s setuptools, Poetry, Hatch and PDM tables, `setup.cfg`, and a literal
`package_dir={"": ...}` or `find_packages(where=...)` in `setup.py`). The host computes the
roots of a workspace before the PR's code runs, and the same files give the same answer in
the sandbox.

No torch here: the host uses it to check the sandbox's reproducer plans.
"""

from __future__ import annotations

import ast
import configparser
import os
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

MAX_FILE_BYTES = 1 << 20  # a packaging file larger than this is not read
MAX_ROOTS = 8
PACKAGING_FILES = ("pyproject.toml", "setup.cfg", "setup.py")  # what declares roots


def module_of(path: str, roots: tuple[str, ...] = ()) -> str:
    """`pkg/sub/mod.py` -> `pkg.sub.mod`, relative to the repository root or, for a file
    under one of `roots` (`src`), to that root."""
    pure = PurePosixPath(path)
    for root in sorted(roots, key=len, reverse=True):
        if pure.is_relative_to(root):
            pure = pure.relative_to(root)
            break
    parts = list(pure.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def root_of(path: str, module: str) -> str:
    """The folder (relative to the repository, "" for its root) under which `module` is the
    file at `path`: what a reproducer puts on `sys.path`; ValueError when it is neither."""
    parts = PurePosixPath(path).with_suffix("").parts
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    names = tuple(module.split("."))
    if not names or parts[len(parts) - len(names) :] != names:
        raise ValueError(f"{path} is not the file of {module}")
    return "/".join(parts[: len(parts) - len(names)])


def source_roots(repo: Path) -> tuple[str, ...]:
    """The checkout's source folders other than its root, relative POSIX paths, first the
    declared ones; () for a flat layout."""
    base = Path(repo).resolve()
    found: list[str] = []
    for candidate in (*_declared(base), *(["src"] if _src_convention(base) else [])):
        root = _checked(base, candidate)
        if root is not None and root not in found:
            found.append(root)
    return tuple(found[:MAX_ROOTS])


def on_sys_path(repo: Path) -> None:
    """The checkout's root, then its source roots, first on `sys.path` (what an editable
    install and `python -m` from the root give together)."""
    root = str(Path(repo).resolve())
    for folder in reversed([root, *(os.path.join(root, r) for r in source_roots(repo))]):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def search_path(repo: Path) -> list[str]:
    """The checkout's root and source roots, as a PYTHONPATH for a child process."""
    root = str(Path(repo).resolve())
    return [root, *(os.path.join(root, r) for r in source_roots(repo))]


def _checked(base: Path, candidate: Any) -> str | None:
    """A declared folder as a clean relative path to an existing directory of the checkout
    (not its root, not outside it), or None."""
    if not isinstance(candidate, str) or not candidate.strip() or "\\" in candidate:
        return None
    pure = PurePosixPath(candidate.strip())
    if (
        pure.is_absolute()
        or any(p in ("..", "") for p in pure.parts)
        or not pure.parts
        or pure.parts == (".",)
    ):
        return None
    clean = "/".join(p for p in pure.parts if p != ".")
    folder = base / clean
    try:
        if folder.is_symlink() or not folder.resolve().is_relative_to(base) or not folder.is_dir():
            return None
    except OSError:
        return None
    return clean or None


def _src_convention(base: Path) -> bool:
    """`src/` is a source root when it is not a package itself and holds one."""
    src = base / "src"
    try:
        if not src.is_dir() or src.is_symlink() or (src / "__init__.py").exists():
            return False
        return any((child / "__init__.py").is_file() for child in src.iterdir() if child.is_dir())
    except OSError:
        return False


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _declared(base: Path) -> Iterator[Any]:
    pyproject, setup_cfg, setup_py = (_read(base / name) for name in PACKAGING_FILES)
    yield from _pyproject(pyproject)
    yield from _setup_cfg(setup_cfg)
    yield from _setup_py(setup_py)


def _table(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _pyproject(text: str | None) -> Iterator[Any]:
    if text is None:
        return
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        return
    package_dir = _table(data, "tool", "setuptools", "package-dir")
    if isinstance(package_dir, dict):
        yield package_dir.get("")
    where = _table(data, "tool", "setuptools", "packages", "find", "where")
    if isinstance(where, list):
        yield from where
    for package in _table(data, "tool", "poetry", "packages") or []:
        if isinstance(package, dict):
            yield package.get("from")
    for package in _table(data, "tool", "hatch", "build", "targets", "wheel", "packages") or []:
        if isinstance(package, str) and "/" in package.strip("/"):
            yield package.strip("/").rpartition("/")[0]
    yield _table(data, "tool", "pdm", "build", "package-dir")


def _setup_cfg(text: str | None) -> Iterator[Any]:
    if text is None:
        return
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    for line in parser.get("options", "package_dir", fallback="").splitlines():
        name, sep, folder = line.partition("=")
        if sep and not name.strip():
            yield folder.strip()
    yield parser.get("options.packages.find", "where", fallback=None)


def _setup_py(text: str | None) -> Iterator[Any]:
    """`package_dir={"": "src"}` and `find_packages("src")` / `find_packages(where="src")`,
    as literals anywhere in the file."""
    if text is None:
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg == "package_dir" and isinstance(keyword.value, ast.Dict):
                for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == ""
                        and isinstance(value, ast.Constant)
                    ):
                        yield value.value
        name = (
            node.func.attr
            if isinstance(node.func, ast.Attribute)
            else node.func.id
            if isinstance(node.func, ast.Name)
            else ""
        )
        if name in ("find_packages", "find_namespace_packages"):
            where = [k.value for k in node.keywords if k.arg == "where"] + node.args[:1]
            for value in where[:1]:
                if isinstance(value, ast.Constant):
                    yield value.value
