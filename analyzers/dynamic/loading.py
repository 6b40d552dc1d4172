"""Loading the module around a finding when a plain import fails, as real repositories' do.

On code nobody wrote for numcheck, most findings ended `no entry reaches the op` because the
module would not import in the sandbox: a package `__init__` that imports a file generated at
build time (`No module named 'torchgeometry.version'`), or `pkg_resources`, or an optional
dependency the function never touches (`einops`). Three ways in, tried in order:

1. `import`: the module as the repository's own code imports it.
2. `package-stubs`: the parent packages are registered as bare namespace packages, so their
   `__init__.py` never runs, and the module itself is imported for real.
3. `extracted`: the module's file is read and its top-level statements run one at a time:
   imports (relative ones resolved against the stubbed packages) and definitions that fail
   are skipped, and statements that do work at import time (calls, loops, `if __name__`
   blocks) are not run at all. The function keeps its own source and whatever module-level
   names could be defined.

The reproducer loads the code the same way (`import_lines`), says which way, and why the plain
import failed, so a reader can judge what was left out.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOW = ("import", "package-stubs", "extracted")


@dataclass(frozen=True)
class Loaded:
    module: Any
    how: str  # one of HOW
    why: str = ""  # why the plain import failed ("" for a plain import)


def _stub_parents(repo_dir: Path, module_name: str) -> None:
    """Bare packages for every parent of `module_name` that is not imported yet."""
    parts = module_name.split(".")
    for i in range(1, len(parts)):
        name = ".".join(parts[:i])
        if name in sys.modules and getattr(sys.modules[name], "__path__", None) is not None:
            continue
        package = types.ModuleType(name)
        package.__path__ = [str(repo_dir.joinpath(*parts[:i]))]
        package.__package__ = name
        sys.modules[name] = package
        if i > 1:
            setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], package)


# Top-level statements the extraction runs: what defines names, not what does work.
_DEFINES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
            ast.Assign, ast.AnnAssign)


def _defines_only(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, _DEFINES):
        return False
    if isinstance(stmt, ast.Assign | ast.AnnAssign):  # `X = 3`, `F = nn.functional`, not calls
        value = stmt.value
        return value is not None and not any(isinstance(n, ast.Call | ast.Await | ast.Yield)
                                             for n in ast.walk(value))
    return True


def extract(repo_dir: Path, module_name: str, path: Path) -> types.ModuleType:
    """The module built statement by statement from its file (see the module doc)."""
    _stub_parents(repo_dir, module_name)
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    module.__package__ = module_name.rpartition(".")[0]
    sys.modules[module_name] = module
    define(module, path.read_text(encoding="utf-8"), str(path))
    return module


def define(module: types.ModuleType, source: str, filename: str) -> None:
    """Run `source`'s top-level definitions in `module`, one statement at a time, skipping
    those that fail and every statement that does work (the extracted way; the fix stage
    loads a patched copy of an extracted module the same way)."""
    for stmt in ast.parse(source, filename=filename).body:
        if not _defines_only(stmt):
            continue
        code = compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec")
        try:
            exec(code, module.__dict__)  # noqa: S102 - the repository's own definitions
        except Exception:  # noqa: BLE001, S112 - a missing dependency: leave that name out
            continue


_LOADED: dict[str, Loaded] = {}  # module name -> how this process loaded it


def load(repo_dir: Path, module_name: str) -> Loaded:
    """The module, by the first of the three ways that works; raises the plain import's
    exception when none does. A module loaded before keeps the way it was loaded."""
    known = _LOADED.get(module_name)
    if known is not None and sys.modules.get(module_name) is known.module:
        return known
    loaded = _load(repo_dir, module_name)
    _LOADED[module_name] = loaded
    return loaded


def _load(repo_dir: Path, module_name: str) -> Loaded:
    root = str(repo_dir.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        return Loaded(importlib.import_module(module_name), "import")
    except Exception as exc:  # the PR's module may fail to import for any reason
        first = exc
        why = f"{type(exc).__name__}: {exc}"
    for name in [n for n in sys.modules if n == module_name or n.startswith(module_name + ".")]:
        del sys.modules[name]  # a half-imported module must not be found next time
    try:
        _stub_parents(repo_dir, module_name)
        return Loaded(importlib.import_module(module_name), "package-stubs", why)
    except Exception:  # noqa: BLE001 - next way
        sys.modules.pop(module_name, None)
    path = repo_dir.joinpath(*module_name.split(".")).with_suffix(".py")
    if not path.is_file():
        path = repo_dir.joinpath(*module_name.split("."), "__init__.py")
    if not path.is_file():
        raise first
    return Loaded(extract(repo_dir, module_name, path), "extracted", why)


def import_lines(module: str, imported: str, how: str, why: str) -> list[str]:
    """The reproducer's lines that bind `imported` from `module`, loaded the way the search
    loaded it (self-contained: only the standard library)."""
    if how == "import":
        return [f"from {module} import {imported}"]
    note = f"# `import {module}` fails here ({why}); numcheck loaded it "
    lines = [note + ("without its packages' __init__ files:" if how == "package-stubs"
                     else "statement by statement, skipping what fails (extracted):"),
             *(["import ast"] if how == "extracted" else []),
             "import importlib", "import pathlib", "import sys", "import types",
             "", "",
             "def _stub_parents(name):",
             "    parts = name.split('.')",
             "    for i in range(1, len(parts)):",
             "        known = sys.modules.get('.'.join(parts[:i]))",
             "        if known is not None and getattr(known, '__path__', None) is not None:",
             "            continue",
             "        package = types.ModuleType('.'.join(parts[:i]))",
             "        package.__path__ = [str(pathlib.Path(*parts[:i]))]",
             "        sys.modules[package.__name__] = package",
             "        if i > 1:",
             "            setattr(sys.modules['.'.join(parts[:i - 1])], parts[i - 1], package)",
             "", ""]
    # the search's process tried the plain import first: the modules that import loaded
    # before failing (a package's own helpers) stay loaded, and the code may need them
    lines += ["try:", f"    importlib.import_module({module!r})",
              "except Exception:", "    pass",
              f"for _name in [n for n in sys.modules if n == {module!r}"
              f" or n.startswith({module + '.'!r})]:",
              "    del sys.modules[_name]", "", ""]
    if how == "package-stubs":
        lines += [f"_stub_parents({module!r})",
                  f"{imported} = importlib.import_module({module!r}).{imported}"]
        return lines
    lines += ["def _extract(name):",
              "    _stub_parents(name)",
              "    path = pathlib.Path(*name.split('.')).with_suffix('.py')",
              "    module = types.ModuleType(name)",
              "    module.__file__, module.__package__ = str(path), name.rpartition('.')[0]",
              "    sys.modules[name] = module",
              "    for stmt in ast.parse(path.read_text(encoding='utf-8')).body:",
              "        value = getattr(stmt, 'value', None)",
              "        work = (ast.Call, ast.Await, ast.Yield)",
              "        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and (value is None or any(",
              "                isinstance(n, work) for n in ast.walk(value))):",
              "            continue",
              "        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef,",
              "                             ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,",
              "                             ast.AnnAssign)):",
              "            try:",
              "                exec(compile(ast.Module([stmt], []), str(path), 'exec'),",
              "                     module.__dict__)",
              "            except Exception:",
              "                pass",
              "    return module",
              "",
              "",
              f"{imported} = _extract({module!r}).{imported}"]
    return lines
