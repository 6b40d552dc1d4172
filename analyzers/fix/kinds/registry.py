"""Where transforms register: a kind's module decorates each of its transforms with
`@transform`, and `kinds/__init__.py` reads them back module by module in developers' order
of kinds, each module's in the order it defines them. That order only breaks ties:
`candidates.py` sorts the edits by class (stable API, then a pattern's own fix, then the
rest) and by kind first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from analyzers.fix.site import Edit, Site

Transform = Callable[[Site], Iterator[Edit]]

_REGISTERED: dict[str, list[Transform]] = {}


def transform(function: Transform) -> Transform:
    """Register a transform: a function of a `Site` that yields zero or more `Edit`s."""
    _REGISTERED.setdefault(function.__module__, []).append(function)
    return function


def registered(module: str) -> tuple[Transform, ...]:
    """The transforms `module` registered, in the order it defines them."""
    return tuple(_REGISTERED.get(module, ()))
