"""Candidate fixes as libcst rewrites of the PR's source, one module per fix kind.

Each transform looks at a `Site` (site.py: the flagged node in the parsed file) and yields
zero or more `Edit`s: a node of the original tree and the node to put in its place, so the
rest of the file, comments and formatting included, stays as it was. A transform is one
function in its kind's module, registered with `@transform` (registry.py) with the kind and
names of its edits and the ops it applies to; its in/out fixtures are in
`tests/fixtures/fix/<kind>/`. The modules are imported here in developers' order of kinds
(docs/numerics.md, `KIND_MODULES`): fused stable APIs, an epsilon, a clamp, a `where` (the
double `where` among them), a masked fill with finfo.min, an upcast. The generic domain
fixes (epsilon, clamp, where) are tried only for ops whose catalogue entry lists that kind;
their bounds come from the op's invalid domain and the dtype (bounds.py).

`rank` is the one order of edits: the fix stage sorts by it (candidates.py) and docs/ops.md
lists each op's fixes by it (`fix_order`).
"""

from __future__ import annotations

import libcst as cst

from analyzers.catalogue import CATALOGUE, FixKind, OpSpec
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
from analyzers.fix.kinds.registry import Registered, Transform, registered
from analyzers.fix.site import Edit, Site, Unsupported

__all__ = ["KIND_ORDER", "REGISTERED", "TRANSFORMS", "edits_for", "fix_order", "rank"]

KIND_ORDER: tuple[FixKind, ...] = (
    "stable-api",
    "epsilon",
    "clamp",
    "where",
    "masked-fill",
    "upcast",
)
# The fix a pattern's own rule calls for comes right after the stable APIs, before the
# generic domain fixes: a double where for a where-gradient leak, finfo.min for a -inf fill.
PATTERN_FIXES = ("double-where", "finfo-min", "assign-guard", "float32-scores")

KIND_MODULES = (stable_log, stable_exp, stable_norm, epsilon, clamp, where, masked_fill, upcast)
REGISTERED: tuple[Registered, ...] = tuple(
    entry for module in KIND_MODULES for entry in registered(module.__name__)
)
TRANSFORMS: tuple[Transform, ...] = tuple(entry.function for entry in REGISTERED)


def rank(kind: FixKind, name: str) -> tuple[int, int]:
    """Where an edit of this kind and name goes among a finding's candidates: stable APIs
    first, a pattern's own fix next, then the generic fixes, each class by kind."""
    group = 0 if kind == "stable-api" else 1 if name in PATTERN_FIXES else 2
    return group, KIND_ORDER.index(kind)


def fix_order(spec: OpSpec) -> list[Registered]:
    """The transforms that may fix a finding on `spec`'s op, in the order the fix stage
    ranks their edits (ties: registration order)."""
    applying = [(index, entry) for index, entry in enumerate(REGISTERED) if entry.applies(spec)]
    applying.sort(key=lambda item: (min(rank(item[1].kind, n) for n in item[1].names), item[0]))
    return [entry for _, entry in applying]


def edits_for(site: Site, strict: bool = False) -> list[Edit]:
    """Every edit the transforms propose for the site, in TRANSFORMS order. A transform that
    fails on code it did not foresee costs only its own candidates (`strict` re-raises, for
    the tests, and checks each edit against its transform's declaration)."""
    out: list[Edit] = []
    for entry in REGISTERED:
        try:
            edits = list(entry.function(site))
        except (Unsupported, cst.ParserSyntaxError):
            site.take_imports()
            continue
        except Exception:
            site.take_imports()
            if strict:
                raise
            continue
        if strict:
            _check_declared(entry, site, edits)
        out.extend(edits)
    return out


def _check_declared(entry: Registered, site: Site, edits: list[Edit]) -> None:
    name = entry.function.__name__
    for edit in edits:
        if edit.kind != entry.kind or edit.name not in entry.names:
            raise AssertionError(
                f"{name} yielded a {edit.kind} edit named {edit.name!r}; it "
                f"declares {entry.kind} {entry.names}"
            )
        spec = CATALOGUE.by_op.get(site.request.op)
        if spec is None or not entry.applies(spec):
            raise AssertionError(
                f"{name} yielded an edit for a finding on "
                f"{site.request.op!r}, an op it does not declare"
            )
