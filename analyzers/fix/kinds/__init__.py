"""Candidate fixes as libcst rewrites of the PR's source, one module per fix kind.

Each transform looks at a `Site` (site.py: the flagged node in the parsed file) and yields
zero or more `Edit`s: a node of the original tree and the node to put in its place, so the
rest of the file, comments and formatting included, stays as it was. A transform is one
function in its kind's module, registered with `@transform` (registry.py); its in/out
fixtures are in `tests/fixtures/fix/<kind>/`. The modules are imported here in developers'
order of kinds (docs/numerics.md, `KIND_MODULES`): fused stable APIs, an epsilon, a clamp, a
`where` (the double `where` among them), a masked fill with finfo.min, an upcast. The generic domain
fixes (epsilon, clamp, where) are tried only for ops whose catalogue entry lists that kind;
their bounds come from the op's invalid domain and the dtype (bounds.py).
"""

from __future__ import annotations

import libcst as cst

from analyzers.fix.kinds import (
    clamp,
    epsilon,
    masked_fill,
    stable_exp,
    stable_log,
    stable_norm,
    upcast,
    where,
)
from analyzers.fix.kinds.registry import Transform, registered
from analyzers.fix.site import Edit, Site, Unsupported

__all__ = ["TRANSFORMS", "edits_for"]

# developers' order of kinds (candidates.KIND_ORDER ranks the kinds themselves)
KIND_MODULES = (stable_log, stable_exp, stable_norm, epsilon, clamp, where, masked_fill, upcast)
TRANSFORMS: tuple[Transform, ...] = tuple(
    function for module in KIND_MODULES for function in registered(module.__name__))


def edits_for(site: Site, strict: bool = False) -> list[Edit]:
    """Every edit the transforms propose for the site, in TRANSFORMS order. A transform that
    fails on code it did not foresee costs only its own candidates (`strict` re-raises, for
    the tests)."""
    out: list[Edit] = []
    for transform in TRANSFORMS:
        try:
            out.extend(transform(site))
        except (Unsupported, cst.ParserSyntaxError):
            site.take_imports()
        except Exception:
            site.take_imports()
            if strict:
                raise
    return out
