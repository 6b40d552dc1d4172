"""`where` fixes: the double `where` (a safe value in the untaken branch, so the gradient
stays finite too), `atan2`, and a plain `where`.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from analyzers.catalogue import CATALOGUE, OpSpec
from analyzers.fix import bounds
from analyzers.fix.kinds.common import catalogue_kinds
from analyzers.fix.kinds.registry import listed, only, transform
from analyzers.fix.site import Edit, Site, expr, is_simple, operand_node, substitute_operand, view
from analyzers.static.rules import RuleId

SAFE_VALUE = {
    "positive": 1.0,
    "nonzero": 1.0,
    "gt_minus_one": 0.0,
    "open_unit": 0.0,
    "open_probability": 0.5,
    "below_exp_max": 0.0,
    "ge_one": 2.0,
}


def _safe_like(site: Site, prefix: str, x: str, value: float) -> str:
    root = prefix
    if value == 1.0:
        return f"{root}.ones_like({x})"
    if value == 0.0:
        return f"{root}.zeros_like({x})"
    if site.is_tf:
        return f"{root}.ones_like({x}) * {value!r}"
    return f"{root}.full_like({x}, {value!r})"


def _enclosing_where(site: Site) -> tuple[cst.Call, int] | None:
    child: cst.CSTNode = site.node
    parent = site.parent(child)
    while parent is not None and not isinstance(parent, cst.BaseStatement):
        if isinstance(parent, cst.Call):
            v = view(site, parent)
            if (
                v is not None
                and v.spec is not None
                and v.spec.op == "where"
                and v.receiver is None
                and len(parent.args) >= 3
            ):
                for index, arg in enumerate(parent.args[:3]):
                    if arg is child:
                        return (parent, index) if index in (1, 2) else None
        child, parent = parent, site.parent(parent)
    return None


def _repeatable(node: cst.BaseExpression) -> bool:
    """Side-effect free and cheap enough to write twice: names, attributes, and subscripts of
    them with literal or ellipsis indices (`disp[..., 0]`)."""
    if is_simple(node):
        return True
    if isinstance(node, cst.Subscript) and _repeatable(node.value):
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index) or not isinstance(
                index.value, cst.Integer | cst.Ellipsis | cst.Name | cst.UnaryOperation
            ):
                return False
        return True
    return False


def has_safe_value(spec: OpSpec) -> bool:
    """An op with an input where it is finite, for the inner where of a double where."""
    return spec.requires in SAFE_VALUE


@transform(
    "where",
    "double-where",
    has_safe_value,
    "where(c, op(x), v) -> where(c, op(where(c, x, safe)), v)",
)
def t_double_where(site: Site) -> Iterator[Edit]:
    spec = CATALOGUE.by_op.get(site.request.op)
    if (
        spec is None
        or not has_safe_value(spec)
        or site.request.rule not in (RuleId.WHERE_GRAD_LEAK, "")
    ):
        return  # a where whose condition does not guard the operand is no double where
    found = _enclosing_where(site)
    if found is None:
        return
    where, branch = found
    operand = operand_node(site)
    if not is_simple(operand) and not isinstance(operand, cst.Subscript):
        return
    func = site.code(where.func)
    prefix = func.rsplit(".", 1)[0] if "." in func else site.spell(site.prefix())
    cond = site.code(where.args[0].value).strip()
    safe_value = SAFE_VALUE[spec.requires]

    def make(x: cst.BaseExpression) -> str:
        c = site.code(x)
        safe = _safe_like(site, prefix, c, safe_value)
        return f"{func}({cond}, {c}, {safe})" if branch == 1 else f"{func}({cond}, {safe}, {c})"

    yield substitute_operand(
        site,
        make,
        "where",
        "double-where",
        "double where: the masked branch's input is made safe too, so "
        "its gradient is not NaN (pytorch#68425)",
    )


@transform("where", "double-where", only("atan2"))
def t_atan2(site: Site) -> Iterator[Edit]:
    """atan2(y, x) -> atan2(y, where(x * x + y * y < tiny, 1, x)): where the gradient's
    denominator is 0 or subnormal, a safe point instead (the double-where pattern,
    pytorch#68425); the value is unchanged at the origin (atan2(0, 1) = atan2(0, 0) = 0) and
    elsewhere, except for vectors too short to have a direction in the dtype."""
    if site.request.op != "atan2" or "where" not in catalogue_kinds("atan2"):
        return
    v = view(site, site.node)
    if v is None or v.receiver is not None or not isinstance(site.node, cst.Call):
        return
    y_arg, x_arg = v.arg(0, ("input", "y")), v.arg(1, ("other", "x"))
    if (
        y_arg is None
        or x_arg is None
        or not (_repeatable(y_arg.value) and _repeatable(x_arg.value))
    ):
        return
    y, x = site.code(y_arg.value), site.code(x_arg.value)
    root = site.spell(site.prefix())
    # the gradient is y / (x**2 + y**2): 0/0 at the origin, and inf already where the
    # squares are subnormal (|x|, |y| below ~1e-19 in float32; CPUs may flush them to 0)
    condition = f"{x} * {x} + {y} * {y} < {bounds.tiny_literal(site.request.dtype)}"
    safe = f"{root}.where({condition}, {root}.ones_like({x}), {x})"
    yield Edit(
        "where",
        "double-where",
        "atan2's gradient is not finite where x**2 + y**2 "
        "is 0 or subnormal (at the origin, and next to it): take it at x = 1 there "
        "instead",
        x_arg.value,
        expr(safe),
        site.take_imports(),
        ("atan2",),
    )


@transform("where", "where", listed("where"))
def t_where(site: Site) -> Iterator[Edit]:
    """Catalogue's `where(x > 0, x, 1)` for log/sqrt: NaN/-inf becomes op(1)."""
    if "where" not in catalogue_kinds(site.request.op) or _enclosing_where(site) is not None:
        return
    operand = operand_node(site)
    if not is_simple(operand):
        return
    root = site.spell(site.prefix())

    def make(x: cst.BaseExpression) -> str:
        c = site.code(x)
        return f"{root}.where({c} > 0, {c}, {root}.ones_like({c}))"

    yield substitute_operand(
        site, make, "where", "where", "select a safe input where the operand is not positive"
    )
