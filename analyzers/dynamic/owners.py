"""Where a framework's public function lives, and patching it for the time of one evaluation,
for the probes that wrap an op (tf_backend, jax_backend): the module the catalogue names and
the module that defines it, so a call the framework makes internally for the user's line is
seen too, and the array type's operators (`a / b`, `a ** p`)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from analyzers.catalogue import CATALOGUE

# The operators of an array type that are an op: `a / b`, `b.__rtruediv__(a)`, `a ** p`.
OPERATORS = {
    "div": ("__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__"),
    "pow": ("__pow__",),
}
REVERSED = frozenset({"__rtruediv__", "__rfloordiv__"})

Patched = list[tuple[Any, str, Any]]  # (owner, attribute, the original), in patching order
Wrap = Callable[[Callable[..., Any], int, str], Callable[..., Any]]


def patch_op(op: str, frameworks: tuple[str, ...], array_type: type, wrap: Wrap) -> Patched:
    """Replace every function the catalogue names for `op` in `frameworks`, and the operators
    of `array_type` that are `op`, by `wrap(original, operand index, name)`; `restore` undoes
    it. A function reachable under two names (tf.sqrt, tf.math.sqrt) is wrapped once."""
    spec = CATALOGUE.by_op[op]
    patched: Patched = []
    seen: set[tuple[int, str]] = set()
    for framework, qualname in spec.qualnames():
        if framework not in frameworks:
            continue
        for owner, attr in owners(qualname):
            if (id(owner), attr) in seen:
                continue
            seen.add((id(owner), attr))
            original = getattr(owner, attr)
            patched.append((owner, attr, original))
            setattr(owner, attr, wrap(original, spec.operand_index(qualname), attr))
    for name in OPERATORS.get(op, ()):
        original = getattr(array_type, name)
        index = 0 if name in REVERSED or op == "pow" else 1
        patched.append((array_type, name, original))
        setattr(array_type, name, wrap(original, index, name))
    return patched


def restore(patched: Patched) -> None:
    for owner, attr, original in reversed(patched):
        setattr(owner, attr, original)
    patched.clear()


def owners(qualname: str) -> Iterator[tuple[Any, str]]:
    """Module objects holding this function: `tensorflow.log` lives in tf.compat.v1."""
    module_path, _, attr = qualname.rpartition(".")
    candidates = [module_path]
    if module_path == "tensorflow" or module_path.startswith("tensorflow."):
        rest = module_path[len("tensorflow") :]
        candidates.append("tensorflow.compat.v1" + rest)
    for path in candidates:
        owner = _resolve(path)
        function = _attribute(owner, attr) if owner is not None else None
        if not callable(function):
            continue
        yield owner, attr
        # where the framework itself looks the function up (math_ops.sqrt for tf.norm)
        home = sys.modules.get(getattr(function, "__module__", None) or "")
        name = getattr(function, "__name__", "")
        if (
            home is not None
            and home is not owner
            and name
            and getattr(home, name, None) is function
        ):
            yield home, name


def _resolve(path: str) -> Any:
    parts = path.split(".")
    try:
        obj: Any = importlib.import_module(parts[0])
    except ImportError:
        return None
    for part in parts[1:]:
        obj = _attribute(obj, part)
        if obj is None:
            return None
    return obj


def _attribute(obj: Any, name: str) -> Any:
    """`obj.name`, or None where reading it fails in any way: TensorFlow's lazy `tf.keras`
    loader recurses without end once the checkout's own `keras` (multi-backend Keras 2.2)
    shadows the one it expects, and a lazy module may fail to import on first touch."""
    try:
        return getattr(obj, name, None)
    except Exception:  # RecursionError among them
        return None
