"""Framework functions that moved: the old name bound to the same function again.

Repositories reviewed at an old commit import names today's frameworks dropped only from one
place: numpyro's distributions say `from jax import lax, ops, tree_map`, and `jax.tree_map`
left JAX (0.4.26) for `jax.tree_util.tree_map`. A stand-in (standins.py) for it lets the
module import, but `tree_map(f, base_dist)` then returns a stand-in instead of the
distribution, and the search ends in `'>=' not supported between instances of 'loc' and
'float'`. The function still exists under its new name, so the old name is bound to it: the
code runs the framework's real function, as it did when it was written.

A keyword renamed since (`jnp.clip(x, a_min=0)`, now `min=`) is the same function too: where
the module's source passes an old keyword the installed function refuses, the function is
wrapped to take it under its new name (`RENAMED_KEYWORDS`).

TensorFlow 2 dropped TensorFlow 1's top-level names it renamed or retired (`tf.to_float`,
`tf.mod`, `tf.log`) and kept every one of them, the same functions, in `tf.compat.v1`.
tensor2tensor of 2017 computes its timing signal with `tf.to_float(num_timescales) - 1`: the
name `tf.to_float` is bound to `tf.compat.v1.to_float`, TensorFlow 1's own function. Only
names the top level lacks are bound (`_missing`), so a name TensorFlow 2 kept with a new
meaning (`tf.where`) keeps it.

A function retired with nothing in its place (torch 1.7's `torch.rfft`) is rebuilt on
today's functions instead (retired.py), where the code calls it and torch lacks it.

Only the moves listed in `MOVED` (old name -> new name, the same function with the same
arguments), TensorFlow 1's names (`tf1_target`), the renames in `RENAMED_KEYWORDS` and the
rebuilt functions of `retired.RETIRED` are made, so a plan can name nothing else (`known`);
the reproducer makes the same moves (`lines`), before it imports the code, and says why.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import keyword
import re
from collections.abc import Sequence
from typing import Any

from analyzers.dynamic import retired
from analyzers.dynamic.standins import CANNOT_IMPORT

# old dotted name -> where the same function lives now
MOVED = {
    "jax.tree_map": "jax.tree_util.tree_map",
    "jax.tree_multimap": "jax.tree_util.tree_map",  # tree_map has taken several trees since
    "jax.tree_flatten": "jax.tree_util.tree_flatten",
    "jax.tree_unflatten": "jax.tree_util.tree_unflatten",
    "jax.tree_leaves": "jax.tree_util.tree_leaves",
    "jax.tree_structure": "jax.tree_util.tree_structure",
    "jax.tree_transpose": "jax.tree_util.tree_transpose",
    # JAX 0.4.1 made every array a `jax.Array`, the type that subsumes DeviceArray, and then
    # removed DeviceArray; code of before tests `isinstance(x, xla.DeviceArray)`
    "jax.interpreters.xla.DeviceArray": "jax.Array",
}
# Python 3.10 dropped collections' aliases of the collections.abc classes; code of before then
# imports them from there (`from collections import Iterable` in Keras 2.2, `collections.Mapping`
# in GPflow of 2017), and fails at import before any op. The same classes, moved.
COLLECTIONS_ABCS = (
    "AsyncGenerator",
    "AsyncIterable",
    "AsyncIterator",
    "Awaitable",
    "ByteString",
    "Callable",
    "Collection",
    "Container",
    "Coroutine",
    "Generator",
    "Hashable",
    "ItemsView",
    "Iterable",
    "Iterator",
    "KeysView",
    "Mapping",
    "MappingView",
    "MutableMapping",
    "MutableSequence",
    "MutableSet",
    "Reversible",
    "Sequence",
    "Set",
    "Sized",
    "ValuesView",
)
MOVED.update({f"collections.{name}": f"collections.abc.{name}" for name in COLLECTIONS_ABCS})
# functions whose keywords were renamed since: dotted name -> (old keyword, new keyword)s.
# `jnp.clip(x, a_min=0)`, NumPy's spelling, was JAX's until 0.4.27 and is refused now.
RENAMED_KEYWORDS = {
    "jax.numpy.clip": (("a_min", "min"), ("a_max", "max")),
}
MOVED_OR_RENAMED = (*MOVED, *RENAMED_KEYWORDS)
# TensorFlow 2 keeps TensorFlow 1's whole API here: `tensorflow.NAME` -> `TF1_API.NAME`
TF1_API = "tensorflow.compat.v1"
# a public name, plain ASCII: the sandbox's plan names it, and the reproducer writes it as code
_TF1_NAME = re.compile(r"tensorflow\.([A-Za-z]\w*)", re.ASCII)
_MADE: list[str] = []  # the moves (and keyword renames) this process made, in order


def tf1_target(name: str) -> str | None:
    """Where TensorFlow 2 keeps TensorFlow 1's top-level `name` (`tensorflow.to_float` ->
    `tensorflow.compat.v1.to_float`); None for any other name. Read off the name alone, so
    the reproducer's writer can check a plan's moves without TensorFlow."""
    found = _TF1_NAME.fullmatch(name)
    if found is None or keyword.iskeyword(found[1]):
        return None
    return f"{TF1_API}.{found[1]}"


def target(name: str) -> str | None:
    """Where the function `name` names lives now, if it is a move numcheck makes."""
    return MOVED.get(name) or tf1_target(name)


def known(name: str) -> bool:
    """Whether `name` is a move or keyword rename numcheck makes (what a plan may name)."""
    return name in MOVED_OR_RENAMED or name in retired.RETIRED or tf1_target(name) is not None


def restore(name: str) -> bool:
    """Bind `name` (a key of MOVED, or a TensorFlow 1 name) to the function it moved to, or
    a retired function to its rebuilt one; False when it is not a known move or the new
    place is missing too."""
    owner, _, attribute = name.rpartition(".")
    try:
        value = _replacement(name)
        if value is None:
            return False
        setattr(importlib.import_module(owner), attribute, value)
    except (ImportError, AttributeError):
        return False
    if name not in _MADE:
        _MADE.append(name)
    return True


def _replacement(name: str) -> Any:
    """What `name` is bound to: its rebuilt function (retired.py), or the function at its
    new place; None when it is neither a retired function nor a move."""
    if name in retired.RETIRED:
        return retired.RETIRED[name]
    target_name = target(name)
    if target_name is None:
        return None
    place, _, function = target_name.rpartition(".")
    return getattr(importlib.import_module(place), function)


_NO_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")


def moved_name(exc: BaseException) -> str | None:
    """The name of MOVED that `exc` says is missing (`cannot import name 'Iterable' from
    'collections'`, `module 'collections' has no attribute 'Mapping'`), else None. Checked
    before any stand-in: the standard library gets none, and a moved name needs none."""
    text = str(exc)
    if isinstance(exc, ImportError) and (found := CANNOT_IMPORT.search(text)):
        name = f"{found[2]}.{found[1]}"
    elif isinstance(exc, AttributeError) and (found := _NO_ATTRIBUTE.search(text)):
        name = f"{found[1]}.{found[2]}"
    else:
        return None
    gone = (tf1_target(name) is not None or name in retired.RETIRED) and _missing(name)
    return name if name in MOVED or gone else None


def restore_named_in(source: str) -> list[str]:
    """Restore the moved `collections` names `source` uses (`collections.Mapping`, `from
    collections import Iterable`), the moves it spells out in full, the TensorFlow 1 names
    it reads off its `tensorflow` import (`tf.to_float`) and the retired functions it calls
    (`torch.rfft(`): one the module reads only when a function runs fails in the search,
    not at import, where `moved_name` would have seen it."""
    used = {f"collections.{name}" for name in re.findall(r"\bcollections\.(\w+)", source)}
    for imported in re.findall(r"^\s*from\s+collections\s+import\s+([^\n#]+)", source, re.M):
        used |= {f"collections.{part.split()[0]}" for part in imported.strip("()").split(",")}
    # a move spelled out in full (`jax.interpreters.xla.DeviceArray`, `jax.tree_map(`)
    used |= {name for name in MOVED if re.search(rf"(?<![\w.]){re.escape(name)}\b", source)}
    names = [name for name in sorted(used) if name in MOVED]
    names += [*_tf1_names_in(source), *retired.used_in(source)]
    return [name for name in names if _missing(name) and restore(name)]


_TF_IMPORT = re.compile(r"^\s*import\s+tensorflow(?:\s+as\s+(\w+))?\s*(?:#.*)?$", re.M)


def _tf1_names_in(source: str) -> list[str]:
    """The `tensorflow.NAME`s `source` reads through its plain `import tensorflow [as tf]`
    (`import tensorflow.compat.v1 as tf` is TensorFlow 1's API already, and matches not)."""
    aliases = {alias or "tensorflow" for alias in _TF_IMPORT.findall(source)}
    used = {
        name
        for alias in aliases
        for name in re.findall(rf"(?<![\w.]){re.escape(alias)}\.([A-Za-z_]\w*)", source)
    }
    return [f"tensorflow.{name}" for name in sorted(used)]


def _missing(name: str) -> bool:
    owner, _, attribute = name.rpartition(".")
    try:
        return not hasattr(importlib.import_module(owner), attribute)
    except ImportError:
        return False


def accept_old_keywords(source: str) -> list[str]:
    """Wrap each function of RENAMED_KEYWORDS whose old keywords `source` passes
    (`a_min=`) and that refuses them now, so it takes them again under their new names;
    the names wrapped. A function that still takes the old keyword is left alone."""
    wrapped = []
    for name, renames in RENAMED_KEYWORDS.items():
        function = name.rpartition(".")[2]
        passed = any(re.search(rf"\b{old}\s*=", source) for old, _ in renames)
        if not passed or re.search(rf"\b{function}\(", source) is None:
            continue
        if name in _MADE:
            wrapped.append(name)
            continue
        owner, _, attribute = name.rpartition(".")
        try:
            module = importlib.import_module(owner)
            current = getattr(module, attribute)
            parameters = inspect.signature(current).parameters
        except (ImportError, AttributeError, TypeError, ValueError):
            continue
        if any(old in parameters for old, _ in renames):
            continue
        setattr(module, attribute, _old_keywords(current, dict(renames)))
        _MADE.append(name)
        wrapped.append(name)
    return wrapped


def _old_keywords(function: Any, renamed: dict[str, str]) -> Any:
    """`function` taking each old keyword of `renamed` under its new name. The reproducer
    writes this same source (`lines`), so it is annotated with `Any` alone."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **{renamed.get(k, k): v for k, v in kwargs.items()})

    return call


def made() -> tuple[str, ...]:
    return tuple(_MADE)


def lines(names: Sequence[str]) -> list[str]:
    """The reproducer's lines that make the same moves and rebuild the same retired
    functions (names already checked by `known`)."""
    moves = {name: new for name in names if (new := target(name)) is not None}
    renames = [name for name in names if name in RENAMED_KEYWORDS]
    out = []
    if moves:
        out.append(
            f"# the code uses names its framework has since moved: {', '.join(moves)}; each "
            "is bound to the same function where it lives now"
        )
    for name, new in moves.items():
        owners = dict.fromkeys([name.rpartition(".")[0], new.rpartition(".")[0]])
        out += [*(f"import {owner}" for owner in owners), f"{name} = {new}"]
    if renames:
        out += [
            f"# the code passes keywords its framework has since renamed: {', '.join(renames)}"
            "; each takes them again under their new names",
            "import functools",
            "from typing import Any",
            "",
            *inspect.getsource(_old_keywords).splitlines(),
            "",
        ]
    for name in renames:
        owner = name.rpartition(".")[0]
        out += [
            f"import {owner}",
            f"{name} = _old_keywords({name}, {dict(RENAMED_KEYWORDS[name])!r})",
        ]
    out = [*out, ""] if out else []
    return [*out, *retired.source_lines(names)]
