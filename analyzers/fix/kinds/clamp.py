"""Clamps: the operand clamped into the op's domain (bounds from bounds.py), and a discarded
guard (`x.clamp(...)` whose result was dropped) assigned back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from analyzers.catalogue import CATALOGUE, OpSpec
from analyzers.fix import bounds
from analyzers.fix.kinds.common import catalogue_kinds, pow_exponent, syntactically_nonneg, tf_call
from analyzers.fix.kinds.registry import listed, transform
from analyzers.fix.site import (
    Edit,
    Site,
    atomic_text,
    expr,
    is_simple,
    operand_node,
    substitute_operand,
)
from analyzers.static.rules import RuleId


def _literal_value(node: cst.BaseExpression | None) -> float | None:
    if isinstance(node, cst.Float | cst.Integer):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal_value(node.expression)
        return None if inner is None else -inner
    return None


def is_guard(spec: OpSpec) -> bool:
    """A clamp or clip whose result the code drops (the discarded-guard rule)."""
    return spec.kind == "guard"


@transform("clamp", "assign-guard", is_guard, "a bare clamp(p, lo, hi) -> p = clamp(p, lo, hi)")
def t_discarded_guard(site: Site) -> Iterator[Edit]:
    """`tf.clip_by_value(p, lo, hi)` as a bare statement -> `p = tf.clip_by_value(p, lo, hi)`."""
    if site.request.rule != RuleId.DISCARDED_GUARD or not isinstance(site.node, cst.Call):
        return
    statement = site.parent(site.node)
    if not isinstance(statement, cst.Expr) or statement.value is not site.node:
        return
    target = expr(site.request.operand.strip())
    if not is_simple(target) or not isinstance(target, cst.Name | cst.Attribute):
        return
    new = cst.Assign(
        targets=[cst.AssignTarget(target=target)], value=site.node, semicolon=statement.semicolon
    )
    yield Edit(
        "clamp",
        "assign-guard",
        f"assign the guard's result back to "
        f"`{site.request.operand.strip()}`: clamp and clip return a new tensor",
        statement,
        new,
        (),
        (),
    )


@transform("clamp", "clamp", listed("clamp"))
def t_clamp(site: Site) -> Iterator[Edit]:
    request = site.request
    spec = CATALOGUE.by_op.get(request.op)
    if spec is None or "clamp" not in catalogue_kinds(request.op):
        return
    dtype = request.dtype
    tf = site.is_tf
    eps = bounds.literal(bounds.unit_margin(dtype))
    requirement = spec.requires
    if request.op == "pow":
        requirement = "positive"

    def torch_min(x: cst.BaseExpression, bound: str) -> str:
        return f"{atomic_text(site, x)}.clamp_min({bound})"

    exponent = _literal_value(pow_exponent(site)) if request.op == "pow" else None
    # x ** y with y < 0 (or unknown): tiny ** y, or the gradient y * tiny ** (y - 1), is
    # inf; a bound sized like an epsilon keeps both finite
    tiny_is_enough = request.op != "pow" or (exponent is not None and exponent >= 0)

    def tiny(x: cst.BaseExpression) -> str:
        if not tiny_is_enough:
            return bounds.literal(bounds.epsilon(dtype))
        if is_simple(x):
            return f"{site.spell('torch.finfo')}({site.code(x)}.dtype).tiny"
        return bounds.tiny_literal(dtype)

    def floor(bound: str) -> Callable[[cst.BaseExpression], str]:
        """A constant lower bound: `tf.maximum(x, bound)`, `x.clamp_min(bound)`."""
        if tf:
            return lambda x: tf_call(site, "maximum", site.code(x), bound)
        return lambda x: torch_min(x, bound)

    make: Callable[[cst.BaseExpression], str] | None = None
    description = ""
    if requirement == "positive" and request.op in ("log", "log2", "log10", "sqrt", "pow"):
        if tf:

            def make(x: cst.BaseExpression) -> str:
                bound = (
                    bounds.tiny_literal(dtype)
                    if tiny_is_enough
                    else bounds.literal(bounds.epsilon(dtype))
                )
                return tf_call(site, "maximum", site.code(x), bound)
        else:

            def make(x: cst.BaseExpression) -> str:
                return torch_min(x, tiny(x))

        description = (
            f"clamp the operand to the smallest normal {dtype} (RANUM's "
            "precondition): finite, but no gradient below it"
            if tiny_is_enough
            else f"clamp the base at {bounds.literal(bounds.epsilon(dtype))}: a negative "
            "or unknown exponent makes tiny ** y (or its gradient) inf"
        )
    elif requirement == "positive" and request.op in ("lgamma", "digamma"):
        # tiny would do for the value, not for the gradient (trigamma(tiny) = 1/tiny**2 = inf)
        bound = bounds.literal(bounds.epsilon(dtype))
        make = floor(bound)
        description = (
            f"clamp the argument at {bound}: {request.op} and its gradient stay finite in {dtype}"
        )
    elif request.op in ("rsqrt", "reciprocal") or (
        request.op == "div"
        and (request.nonnegative or syntactically_nonneg(site, operand_node(site)))
    ):
        bound = bounds.literal(bounds.epsilon(dtype))
        make = floor(bound)
        description = (
            f"clamp the non-negative divisor at {bound}, so the quotient stays finite in {dtype}"
        )
    elif request.op == "div":
        # a one-sided floor is right for the usual divisor (a count, a sum of mask weights)
        # and reads simply; the equivalence check rejects it where normal inputs give a
        # negative divisor (`x / (width - 1.0)`), and the sign-keeping clamp, which names the
        # divisor three times, comes next
        bound = bounds.literal(bounds.epsilon(dtype))
        if not is_simple(operand_node(site)):
            yield substitute_operand(
                site,
                floor(bound),
                "clamp",
                "clamp",
                f"clamp the divisor at {bound}: for a non-negative divisor (a count, a sum "
                "of weights); a negative one would change the outputs",
            )
        if tf:

            def make(x: cst.BaseExpression) -> str:
                c = site.code(x)
                return tf_call(
                    site,
                    "where",
                    f"{c} < 0",
                    tf_call(site, "minimum", c, f"-{bound}"),
                    tf_call(site, "maximum", c, bound),
                )
        else:

            def make(x: cst.BaseExpression) -> str:
                c, a = site.code(x), atomic_text(site, x)
                return (
                    f"{site.spell('torch.where')}({c} < 0, {a}.clamp_max(-{bound}), "
                    f"{a}.clamp_min({bound}))"
                )

        description = f"keep the divisor's magnitude at least {bound}, its sign kept"
    elif requirement == "open_unit":
        if tf:

            def make(x: cst.BaseExpression) -> str:
                return tf_call(site, "clip_by_value", site.code(x), f"-1 + {eps}", f"1 - {eps}")
        else:

            def make(x: cst.BaseExpression) -> str:
                return f"{atomic_text(site, x)}.clamp(-1 + {eps}, 1 - {eps})"

        description = f"clamp strictly inside (-1, 1) by {eps}, where the gradient is finite"
    elif requirement == "gt_minus_one":
        make = floor(f"-1 + {eps}")
        description = f"clamp above -1 by {eps}"
    elif requirement == "ge_one":
        make = floor(f"1 + {eps}")
        description = f"clamp above 1 by {eps}"
    elif requirement == "open_probability":
        if tf:
            return
        make = lambda x: f"{atomic_text(site, x)}.clamp({eps}, 1 - {eps})"  # noqa: E731
        description = f"clamp into [{eps}, 1 - {eps}]"
    elif requirement == "below_exp_max":
        threshold = spec.thresholds.get(dtype)
        bound = bounds.exp_bound(dtype, threshold)
        two_sided = request.op in ("cosh", "sinh")
        if tf:

            def make(x: cst.BaseExpression) -> str:
                if two_sided:
                    return tf_call(site, "clip_by_value", site.code(x), f"-{bound}", bound)
                return tf_call(site, "minimum", site.code(x), bound)
        else:

            def make(x: cst.BaseExpression) -> str:
                if two_sided:
                    return f"{atomic_text(site, x)}.clamp(-{bound}, {bound})"
                return f"{atomic_text(site, x)}.clamp_max({bound})"

        description = f"clamp the exponent at {bound} = log(max) of {dtype}"
    if make is None:
        return
    yield substitute_operand(site, make, "clamp", "clamp", description)
