"""Framework functions that moved: the old name bound to the same function again.

Repositories reviewed at an old commit import names today's frameworks dropped only from one
place: numpyro's distributions say `from jax import lax, ops, tree_map`, and `jax.tree_map`
left JAX (0.4.26) for `jax.tree_util.tree_map`. A stand-in (standins.py) for it lets the
module import, but `tree_map(f, base_dist)` then returns a stand-in instead of the
distribution, and the search ends in `'>=' not supported between instances of 'loc' and
'float'`. The function still exists under its new name, so the old name is bound to it: the
code runs the framework's real function, as it did when it was written.

Only the moves listed in `MOVED` are made (old name -> new name, the same function with the
same arguments), so a plan can name nothing else; the reproducer makes the same moves
(`lines`), before it imports the code, and says why.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

# old dotted name -> where the same function lives now
MOVED = {
    "jax.tree_map": "jax.tree_util.tree_map",
    "jax.tree_multimap": "jax.tree_util.tree_map",  # tree_map has taken several trees since
    "jax.tree_flatten": "jax.tree_util.tree_flatten",
    "jax.tree_unflatten": "jax.tree_util.tree_unflatten",
    "jax.tree_leaves": "jax.tree_util.tree_leaves",
    "jax.tree_structure": "jax.tree_util.tree_structure",
    "jax.tree_transpose": "jax.tree_util.tree_transpose",
}
_MADE: list[str] = []  # the moves this process made, in order


def restore(name: str) -> bool:
    """Bind `name` (a key of MOVED) to the function it moved to; False when it is not a
    known move or the new place is missing too."""
    target = MOVED.get(name)
    if target is None:
        return False
    owner, _, attribute = name.rpartition(".")
    place, _, function = target.rpartition(".")
    try:
        value = getattr(importlib.import_module(place), function)
        setattr(importlib.import_module(owner), attribute, value)
    except (ImportError, AttributeError):
        return False
    if name not in _MADE:
        _MADE.append(name)
    return True


def made() -> tuple[str, ...]:
    return tuple(_MADE)


def lines(names: Sequence[str]) -> list[str]:
    """The reproducer's lines that make the same moves (names already checked against
    MOVED)."""
    if not names:
        return []
    out = [
        f"# the code uses names its framework has since moved: {', '.join(names)}; each is "
        "bound to the same function under its new name"
    ]
    for name in names:
        place = MOVED[name].rpartition(".")[0]
        out += [f"import {place}", f"{name} = {MOVED[name]}"]
    return [*out, ""]
