"""Where a framework's public function lives, for the probes that patch it (tf_backend,
jax_backend): the module the catalogue names and the module that defines it, so a call the
framework makes internally for the user's line is seen too."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any


def owners(qualname: str) -> Iterator[tuple[Any, str]]:
    """Module objects holding this function: `tensorflow.log` lives in tf.compat.v1."""
    module_path, _, attr = qualname.rpartition(".")
    candidates = [module_path]
    if module_path == "tensorflow" or module_path.startswith("tensorflow."):
        rest = module_path[len("tensorflow"):]
        candidates.append("tensorflow.compat.v1" + rest)
    for path in candidates:
        owner = _resolve(path)
        function = getattr(owner, attr, None) if owner is not None else None
        if not callable(function):
            continue
        yield owner, attr
        # where the framework itself looks the function up (math_ops.sqrt for tf.norm)
        home = sys.modules.get(getattr(function, "__module__", None) or "")
        name = getattr(function, "__name__", "")
        if home is not None and home is not owner and name \
                and getattr(home, name, None) is function:
            yield home, name


def _resolve(path: str) -> Any:
    parts = path.split(".")
    try:
        obj: Any = importlib.import_module(parts[0])
    except ImportError:
        return None
    for part in parts[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj
