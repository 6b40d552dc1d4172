"""Where transforms register: a kind's module decorates each of its transforms with
`@transform(kind, names, applies, shows)`, and `kinds/__init__.py` reads them back module by
module in developers' order of kinds, each module's in the order it defines them.

The declaration is what the rest of the project reads about a transform without running it:
the fix stage ranks the edits by kind and name (`kinds.rank`), and docs/ops.md lists, for
each op, the transforms that apply to it in that same order (`kinds.fix_order`). The tests
run every transform strictly, which checks each edit against its transform's declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from analyzers.catalogue import FixKind, OpSpec
from analyzers.fix.site import Edit, Site

Transform = Callable[[Site], Iterator[Edit]]
Applies = Callable[[OpSpec], bool]


@dataclass(frozen=True)
class Registered:
    """A transform and what it declares: the kind and names of the edits it yields, the ops
    whose findings it may fix, and, for docs, what it does (`shows`; empty for a generic
    domain fix, which is shown by the catalogue's template of its kind for each op)."""

    function: Transform
    kind: FixKind
    names: tuple[str, ...]
    applies: Applies
    shows: str = ""


_REGISTERED: dict[str, list[Registered]] = {}


def only(*ops: str) -> Applies:
    """Applies to findings on these ops."""
    return lambda spec: spec.op in ops


def listed(kind: FixKind) -> Applies:
    """Applies to the ops whose catalogue entry lists `kind`: the generic domain fixes."""
    return lambda spec: kind in spec.fix_kinds()


def transform(
    kind: FixKind, names: str | tuple[str, ...], applies: Applies, shows: str = ""
) -> Callable[[Transform], Transform]:
    """Register a transform: a function of a `Site` that yields zero or more `Edit`s."""

    def register(function: Transform) -> Transform:
        entry = Registered(
            function, kind, (names,) if isinstance(names, str) else names, applies, shows
        )
        _REGISTERED.setdefault(function.__module__, []).append(entry)
        return function

    return register


def registered(module: str) -> tuple[Registered, ...]:
    """The transforms `module` registered, in the order it defines them."""
    return tuple(_REGISTERED.get(module, ()))
