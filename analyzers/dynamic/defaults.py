"""The value a package gives a parameter by default elsewhere, for a constructor parameter
that has none: PyG's `DegreeScalerAggregation(aggr, scaler, deg)` takes an aggregation by
name (`aggr: Union[str, List[str], Aggregation]`), and nothing in its own signature, body or
docstring names one; `MessagePassing(aggr="add")`, in the same package, does. A name the
package's own signatures default to is one its code accepts, and the reproducer passes it by
keyword, so the reader sees it. The package's files are read, not imported (a module that
failed to import, or was never imported, still says what its defaults are), and only text
values count: a number or an object defaulted elsewhere says too little about this parameter.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections import Counter
from pathlib import Path

MAX_FILES = 2000  # of one package, read once per process


def package_default(owner: type, name: str) -> str | None:
    """The text value that the function signatures of `owner`'s top-level package most often
    give a parameter called `name` by default; None when none does."""
    folder = _package_folder(owner)
    if folder is None:
        return None
    seen = _text_defaults(folder).get(name)
    return seen.most_common(1)[0][0] if seen else None


def _package_folder(owner: type) -> Path | None:
    """The folder of the owner's top-level package, found from its source file and its
    module's dotted name (the package itself may have failed to import: loading.py); the
    file itself for a top-level module; None without a source file."""
    depth = owner.__module__.count(".")
    try:
        source = inspect.getsourcefile(owner)
    except TypeError:
        return None
    if source is None:
        return None
    path = Path(source)
    if depth == 0:  # a top-level module: its own file is the package
        return path
    parents = path.parents
    level = depth if path.name == "__init__.py" else depth - 1
    return parents[level] if level < len(parents) else None


@functools.lru_cache(maxsize=8)
def _text_defaults(folder: Path) -> dict[str, Counter[str]]:
    """{parameter name: Counter of its text defaults} over the signatures of the package's
    files (or of the one file)."""
    found: dict[str, Counter[str]] = {}
    files = [folder] if folder.is_file() else sorted(folder.rglob("*.py"))[:MAX_FILES]
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for arg, default in _defaulted(node.args):
                    if isinstance(default, ast.Constant) and isinstance(default.value, str):
                        found.setdefault(arg.arg, Counter())[default.value] += 1
    return found


def _defaulted(args: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    """Each parameter that has a default, with it (positional ones take the last defaults)."""
    positional = [*args.posonlyargs, *args.args]
    paired = list(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    return [*paired, *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
