"""Flax linen Modules as entries: built unbound, then run through `apply`.

A linen Module's methods run only when the Module is bound to a scope: called directly,
`self.param` and `self.make_rng` have nowhere to read from (flax raises; its first linen, of
July 2020, fails on a missing `scope`). Its users call `module.apply(variables, x, rngs=...)`
after `module.init(...)`. So a member of a linen Module is called as
`apply({}, *args, method=name, mutable=True, rngs=...)`: with no variables and every
collection mutable, the call makes the parameters as `init` would, from fixed keys (each call
makes the same ones), and runs the member on them, in one pass that `jax.grad` follows back
to the inputs. That first linen also made `parent` a required field and named the parameter
stream `param`, not `params`; both forms are served.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

# the random streams every call gets: today's parameter stream, the first linen's, and the
# one flax's own Dropout draws from; a Module's own `make_rng("noise")` adds its names
BASE_STREAMS = ("params", "param", "dropout")
_MAKE_RNG = re.compile(r"""make_rng\(\s*['"]([A-Za-z_]\w*)['"]""")


def is_linen_module(owner: Any) -> bool:
    """Is `owner` a subclass of flax's `flax.linen.Module` (any version)?"""
    return isinstance(owner, type) and any(
        cls.__name__ == "Module" and cls.__module__ == "flax.linen.module" for cls in owner.__mro__
    )


def streams(owner: type) -> tuple[str, ...]:
    """The random streams a call passes: `BASE_STREAMS`, then every name the Module's own
    classes pass to `make_rng` as a literal (flax raises on a stream it was not given)."""
    names = list(BASE_STREAMS)
    for cls in owner.__mro__:
        if cls.__module__.startswith("flax.") or cls is object:
            continue
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        names += [n for n in _MAKE_RNG.findall(source) if n not in names]
    return tuple(names)


def unbound_init(owner: type) -> dict[str, Any]:
    """The constructor keywords that leave the Module unbound: `parent=None` where the
    Module requires a parent (the first linen); nothing where `parent` has a default."""
    try:
        parent = inspect.signature(owner).parameters.get("parent")
    except (TypeError, ValueError):
        return {}
    if parent is not None and parent.default is inspect.Parameter.empty:
        return {"parent": None}
    return {}


def apply_member(
    module: Any,
    member: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    names: tuple[str, ...],
    seed: int,
) -> Any:
    """`module.apply({}, *args, method=member, mutable=True)`'s output: the member run on
    parameters made from the keys `seed`, `seed + 1`, ... for `names`, in order (the
    reproducer makes the same keys)."""
    import jax

    rngs = {name: jax.random.PRNGKey(seed + i) for i, name in enumerate(names)}
    output, _ = module.apply({}, *args, rngs=rngs, method=member, mutable=True, **kwargs)
    return output
