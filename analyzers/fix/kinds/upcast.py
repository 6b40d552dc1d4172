"""Upcasts: attention scores and vanishing sums computed in float32 under float16."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from analyzers.catalogue import OpSpec
from analyzers.epsilon import is_epsilon
from analyzers.fix.kinds.common import catalogue_kinds, tf_call
from analyzers.fix.kinds.registry import listed, only, transform
from analyzers.fix.site import (
    Edit,
    Site,
    atomic,
    atomic_text,
    expr,
    is_simple,
    operand_node,
    replace_in,
    view,
)
from analyzers.static.rules import RuleId


def _upcast_matmul(
    site: Site, node: cst.BaseExpression
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(the product with both factors cast to float32, its first factor) for the first
    matmul inside `node`: `a @ b`, `matmul/bmm(a, b)`, `einsum(eq, a, b)`."""
    tf = site.is_tf

    def up(x: cst.BaseExpression) -> cst.BaseExpression:
        if tf:
            return expr(tf_call(site, "cast", site.code(x), site.spell("tensorflow.float32")))
        return expr(f"{atomic_text(site, x)}.float()")

    found: list[tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression]] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if found:
                return False
            if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.MatrixMultiply):
                found.append((n, n.with_changes(left=up(n.left), right=up(n.right)), n.left))
                return False
            v = view(site, n) if isinstance(n, cst.Call) else None
            leaf = v.name if v is not None else ""
            if (
                v is not None
                and leaf in ("matmul", "bmm", "mm", "einsum")
                and (v.qual is not None or v.receiver is None)
            ):
                assert isinstance(n, cst.Call)
                factors = [i for i, a in enumerate(n.args) if a.keyword is None]
                factors = factors[1:3] if leaf == "einsum" else factors[:2]
                if len(factors) == 2:
                    args = [
                        a.with_changes(value=up(a.value)) if i in factors else a
                        for i, a in enumerate(n.args)
                    ]
                    found.append((n, n.with_changes(args=args), n.args[factors[0]].value))
                    return False
            return True

    node.visit(Finder())
    if not found:
        return None
    old, new, first = found[0]
    return replace_in(node, old, new), first  # type: ignore[return-value]


def _under_autocast(site: Site) -> bool:
    """Inside `with torch.autocast(...)` a `.float()` factor is cast back to float16 by the
    matmul itself: the upcast needs autocast disabled there, which this fix does not write."""
    node: cst.CSTNode | None = site.node
    while node is not None:
        if isinstance(node, cst.With) and any(
            "autocast" in site.code(item.item) or "amp" in site.code(item.item)
            for item in node.items
        ):
            return True
        node = site.parent(node)
    return False


def _vanishing_sum(
    site: Site, node: cst.BaseExpression
) -> tuple[cst.BinaryOperation, cst.BaseExpression] | None:
    """The first `a + eps` inside `node` whose epsilon is a small literal or a name that
    says so (`self.eps`, `variance_epsilon`), with its other side `a`."""
    found: list[tuple[cst.BinaryOperation, cst.BaseExpression]] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if found:
                return False
            if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Add):
                for eps, other in ((n.right, n.left), (n.left, n.right)):
                    if is_epsilon(eps, site.code(eps)):
                        found.append((n, other))
                        return False
            return True

    node.visit(Finder())
    return found[0] if found else None


@transform(
    "upcast",
    "float32-scores",
    only("softmax"),
    "softmax(q @ k.T * s) -> softmax(q.float() @ k.float().T * s).to(q.dtype) (float16 scores)",
)
def t_float32_scores(site: Site) -> Iterator[Edit]:
    """`softmax(q @ k.T * s)` -> `softmax(q.float() @ k.T.float() * s).to(q.dtype)`: the
    product is what overflows float16 (docs/numerics.md #12), so a softmax in float32 alone is
    too late; the probabilities go back to the model's dtype for the next product."""
    if site.request.rule != RuleId.FP16_SCORES_OVERFLOW or _under_autocast(site):
        return
    v = view(site, site.node)
    operand = v.operand() if v is not None else None
    if v is None or operand is None or not isinstance(site.node, cst.Call):
        return
    upcast = _upcast_matmul(site, operand)
    if upcast is None:
        return
    scores, first = upcast
    call = site.node
    if v.receiver is not None and isinstance(call.func, cst.Attribute):
        inner = call.with_changes(func=call.func.with_changes(value=atomic(scores)))
    else:
        inner = call.with_changes(
            args=[a.with_changes(value=scores) if a.value is operand else a for a in call.args]
        )
    text = site.code(inner)
    if site.is_tf:
        if not is_simple(first):
            return
        new = expr(tf_call(site, "cast", text, f"{site.code(first)}.dtype"))
    else:
        new = expr(f"{text}.to({site.code(first)}.dtype)" if is_simple(first) else f"{text}.half()")
    yield Edit(
        "upcast",
        "float32-scores",
        "compute the scores and their softmax in float32 "
        "(a float16 product passes 65504 before any scale), then cast back",
        call,
        new,
        site.take_imports(),
        (),
    )


def takes_upcast_eps(spec: OpSpec) -> bool:
    """An op whose catalogue lists an upcast and that an epsilon guards (not the softmax,
    whose upcast is the scores')."""
    return listed("upcast")(spec) and spec.requires != "none"


@transform("upcast", "float32-eps", takes_upcast_eps)
def t_float32_eps(site: Site) -> Iterator[Edit]:
    """`x / torch.sqrt(var + self.eps)` in float16, with eps 1e-8 (0.0 there) ->
    `(x / torch.sqrt(var.float() + self.eps)).to(var.dtype)`: the sum the epsilon vanishes
    from is computed in float32, where it does not, and the flagged expression goes back to
    the model's dtype (docs/numerics.md #13: how float16 LayerNorm and RMSNorm are written)."""
    if (
        site.request.dtype != "float16"
        or _under_autocast(site)
        or "upcast" not in catalogue_kinds(site.request.op)
    ):
        return
    node = site.node
    if not isinstance(node, cst.BaseExpression):
        return
    found = _vanishing_sum(site, operand_node(site))
    if found is None or not is_simple(found[1]):
        return
    total, value = found
    if site.is_tf:
        up = expr(tf_call(site, "cast", site.code(value), site.spell("tensorflow.float32")))
    else:
        up = expr(f"{atomic_text(site, value)}.float()")
    upcast = replace_in(
        node,
        total,
        total.with_changes(
            left=up if total.left is value else total.left,
            right=up if total.right is value else total.right,
        ),
    )
    assert isinstance(upcast, cst.BaseExpression)
    text = site.code(upcast)
    back = (
        tf_call(site, "cast", text, f"{site.code(value)}.dtype")
        if site.is_tf
        else f"{atomic_text(site, upcast)}.to({site.code(value)}.dtype)"
    )
    yield Edit(
        "upcast",
        "float32-eps",
        f"compute `{site.code(total)}` in float32, where the "
        "epsilon is not 0.0 as in float16, and cast the result back",
        node,
        expr(back),
        site.take_imports(),
        (),
    )
