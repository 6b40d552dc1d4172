"""Stand-ins for the modules a repository imports and this environment cannot give it.

Real code imports more than its numerics use: allennlp's metrics import `spacy` through
`allennlp.common`; PyG's layers import the compiled `torch_scatter`; gpytorch's package imports
`libfft`, a C extension its build step made; timm imports a torchvision whose compiled ops do not
load ("operator torchvision::nms does not exist"); numpyro imports
`jax.experimental.host_callback`, gone from today's JAX. Each import fails before the function
with the flagged op is ever defined, and the finding ended `no entry reaches the op`.

A stand-in module takes the missing one's place: every attribute is a class that can be
subclassed, called (its instances are stand-ins too) and used as a decorator (a lone function
passed to it comes back unchanged). Code that only imports the module, or defines classes on its
bases, then loads; code that computes with it fails at the call, as it would have at import.
A stand-in never makes a float, so a NaN or Inf that a search finds still comes from the
repository's own arithmetic. The reproducer installs the same stand-ins, names them in a comment,
and a reader can judge whether the finding depends on them.

Which module to stand in for is read off the import's exception (`missing_module`): a module
that is not installed (`No module named 'spacy'`), a name a package does not have
(`cannot import name 'libfft' from 'gpytorch'`: the submodule `gpytorch.libfft`), or an installed
package that raises while importing itself (its top-level name). The repository's own modules
that exist in the checkout are never stood in for: their failure is the finding's to report.

The classes below down to `install` are also the reproducer's text (`source_lines`): a
reproducer is self-contained and imports nothing of numcheck's, so they use the standard
library only.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import re
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any

MAX_STAND_INS = 8  # stand-ins one module may need before numcheck gives up on importing it
# what numcheck's own search runs on: never stood in for when it raises
FRAMEWORKS = frozenset({"torch", "numpy", "jax", "jaxlib", "tensorflow", "keras", "tf_keras"})


class _StandInType(type):
    """The type of stand-in classes: attributes of the class are stand-ins too."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stand_in_class(name, cls.__module__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if (
            "_stand_in" in cls.__dict__
            and len(args) == 1
            and not kwargs
            and callable(args[0])
            and not isinstance(args[0], _StandInType)
        ):
            return args[0]  # used as a decorator: the function stays the repository's
        return super().__call__(*args, **kwargs)


class _StandIn(metaclass=_StandInType):
    _stand_in = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stand_in_class(name, type(self).__module__)()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _stand_in_class("result", type(self).__module__)()

    def __iter__(self) -> Any:
        return iter(())

    def __bool__(self) -> bool:
        return False


def _stand_in_class(name: str, module: str) -> Any:
    return _StandInType(name, (_StandIn,), {"_stand_in": True, "__module__": module})


class _StandInModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _stand_in_class(name, self.__name__)
        setattr(self, name, value)
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # a function the library dropped
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _stand_in_class("result", self.__name__)()


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on `sys.meta_path`, for its names and their submodules only."""

    def __init__(self, names: Any) -> None:
        self.names = set(names)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if any(fullname == n or fullname.startswith(n + ".") for n in self.names):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> Any:
        module = _StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: Any) -> None:
        pass


def install(names: Any) -> None:
    """Stand in for `names` (dotted module names) in this process, and forget any half-imported
    module of theirs so the next import finds the stand-in."""
    finder = next((f for f in sys.meta_path if isinstance(f, _StandInFinder)), None)
    if finder is None:
        finder = _StandInFinder(())
        sys.meta_path.insert(0, finder)
    finder.names.update(names)
    for loaded in list(sys.modules):
        if any(loaded == n or loaded.startswith(n + ".") for n in names):
            del sys.modules[loaded]


# ------------------------------------------------------------------ not in the reproducer


RUNTIME = (_StandInType, _StandIn, _stand_in_class, _StandInModule, _StandInFinder, install)
# `from x import y` that failed: (y, x); moved.moved_name reads it too
CANNOT_IMPORT = re.compile(
    r"cannot import name '(\w+)' from (?:partially initialized module )?'([\w.]+)'"
)
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def source_lines() -> list[str]:
    """The stand-in machinery as a reproducer spells it."""
    lines = [
        "import importlib.abc",
        "import importlib.machinery",
        "import sys",
        "import types",
        "from typing import Any",
        "",
    ]
    for part in RUNTIME:
        lines += ["", *inspect.getsource(part).splitlines(), ""]
    return lines


def stood_in() -> tuple[str, ...]:
    """The names this process stands in for, sorted."""
    finder = next((f for f in sys.meta_path if isinstance(f, _StandInFinder)), None)
    return tuple(sorted(finder.names)) if finder is not None else ()


def may_stand_in(name: str) -> bool:
    """A dotted module name numcheck may stand in for: never the standard library (it is
    always there) nor a framework's top-level package (a reproducer without the real torch
    would check nothing); a framework's dropped submodule (`jax.experimental.host_callback`)
    is fine. The host holds a plan's stand-ins to this too (writer.py)."""
    if _DOTTED.match(name) is None:
        return False
    top = name.split(".")[0]
    return top not in sys.stdlib_module_names and name not in FRAMEWORKS


def missing_module(exc: BaseException, repo_dir: Path) -> str | None:
    """The module to stand in for so that the import that raised `exc` gets further, or None:
    a module not installed, a missing name of a package (as its submodule), or the top-level
    package of an installed library that raised while importing itself. Never one of the
    checkout's own modules that exists there."""
    name = _named(exc, repo_dir)
    return None if name is None or name in stood_in() else name


def _named(exc: BaseException, repo_dir: Path) -> str | None:
    """The module `exc` says is missing, where numcheck may stand in for it, whether or not
    this process already does."""
    name: str | None = None
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        name = exc.name
    elif isinstance(exc, ImportError) and (found := CANNOT_IMPORT.search(str(exc))):
        name = f"{found[2]}.{found[1]}"
    else:
        name = _raising_library(exc, repo_dir)
    if name is None or not may_stand_in(name) or _in_checkout(name, repo_dir):
        return None
    return name


_LAST_IMPORT_ERROR = re.compile(r"^(ModuleNotFoundError|ImportError): (.*)$", re.MULTILINE)
_NOT_FOUND = re.compile(r"^No module named '([\w.]+)'")


def missing_in_traceback(stderr: str, repo_dir: Path) -> str | None:
    """`missing_module` for an import that failed in another process, read off the traceback
    it printed (its last line naming an import error): what a reproducer's fresh process
    misses where the search's did not (a package the tests had left half-imported there,
    gpytorch's `from .. import libfft` of a compiled module). The same names qualify, so
    never the checkout's own modules, the standard library or a framework; one this process
    stands in for too (the other process is not this one)."""
    found = _LAST_IMPORT_ERROR.findall(stderr)
    if not found:
        return None
    kind, message = found[-1]
    exc: ImportError
    if kind == "ModuleNotFoundError" and (name := _NOT_FOUND.match(message)) is not None:
        exc = ModuleNotFoundError(message, name=name[1])
    else:
        exc = ImportError(message)
    return _named(exc, repo_dir)


def _in_checkout(name: str, repo_dir: Path) -> bool:
    from analyzers.dynamic.layout import source_roots

    parts = name.split(".")
    for base in [repo_dir, *(repo_dir / r for r in source_roots(repo_dir))]:
        path = base.joinpath(*parts)
        if path.is_dir() or path.with_suffix(".py").is_file():
            return True
    return False


def _raising_library(exc: BaseException, repo_dir: Path) -> str | None:
    """The top-level package of the first installed library whose import raised `exc`
    (timm's `import torchvision`: its compiled ops fail to register), wherever it is
    installed (the interpreter's site-packages, the repository's dependency folder); never
    the standard library, the checkout, or a framework numcheck itself runs on."""
    root = str(repo_dir.resolve())
    stdlib = sysconfig.get_paths()["stdlib"]
    traceback = exc.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        filename = frame.f_code.co_filename
        top = str(frame.f_globals.get("__name__", "")).split(".")[0]
        if (
            frame.f_code.co_name == "<module>"
            and top
            and not filename.startswith((root, stdlib, "<"))
            and top not in sys.stdlib_module_names
            and top not in FRAMEWORKS
        ):
            return top
        traceback = traceback.tb_next
    return None
