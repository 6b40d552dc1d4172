"""Stable APIs for norms and ratios: `normalize` for a division by a norm,
`divide_no_nan`, and `abs()` for a power whose sign is meaningless.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from analyzers.fix.kinds.common import catalogue_kinds, pow_exponent
from analyzers.fix.kinds.registry import only, transform
from analyzers.fix.site import Edit, Site, atomic_text, expr, flat, substitute_operand, view


@transform(
    "stable-api", "normalize", only("div"), "x / x.norm(dim=d, keepdim=True) -> normalize(x, dim=d)"
)
def t_normalize(site: Site) -> Iterator[Edit]:
    node = site.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        numerator, denominator = node.left, node.right
    else:
        d = view(site, node)
        if (
            d is None
            or d.spec is None
            or d.spec.op != "div"
            or d.receiver is not None
            or not isinstance(node, cst.Call)
            or len(node.args) != 2
            or any(a.keyword for a in node.args)
        ):
            return
        numerator, denominator = node.args[0].value, node.args[1].value
    n = view(site, denominator)
    if n is None or n.spec is None or n.spec.op != "norm":
        return
    x = n.operand()
    if x is None or flat(site.code(x.with_changes(lpar=[], rpar=[]))) != flat(
        site.code(numerator.with_changes(lpar=[], rpar=[]))
    ):
        return
    rest = n.rest()
    keywords = {a.keyword.value: a.value for a in rest if a.keyword is not None}
    plain = [a.value for a in rest if a.keyword is None]
    tf = site.is_tf
    p_node = keywords.get("ord" if tf or (n.qual or "").startswith("torch.linalg") else "p")
    if p_node is None and plain and not tf:
        p_node = plain.pop(0)
    if p_node is not None and site.code(p_node) not in ("2", "2.0", "'euclidean'", '"euclidean"'):
        return
    dim = keywords.get("axis" if tf else "dim")
    if dim is None and plain:
        dim = plain.pop(0)
    keep = keywords.get("keepdims" if tf else "keepdim")
    if keep is None and plain:
        keep = plain.pop(0)
    if dim is None or keep is None or site.code(keep) != "True" or plain:
        return  # without keepdim the division broadcasts differently; without dim, rank
    if tf:
        text = (
            f"{site.spell('tensorflow.math.l2_normalize')}({site.code(x)}, axis={site.code(dim)})"
        )
    else:
        text = (
            f"{site.spell('torch.nn.functional.normalize')}({site.code(x)}, dim={site.code(dim)})"
        )
    new = expr(text)
    yield Edit(
        "stable-api",
        "normalize",
        "x / x.norm(dim, keepdim=True) -> normalize(x, dim): divides by max(norm, eps)",
        node,
        new,
        site.take_imports(),
        (),
    )


@transform(
    "stable-api", "divide-no-nan", only("div"), "x / y -> tf.math.divide_no_nan(x, y) (TensorFlow)"
)
def t_divide_no_nan(site: Site) -> Iterator[Edit]:
    node = site.node
    if not site.is_tf or site.request.op != "div" or site.request.nonnegative:
        return
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        num, den = node.left, node.right
    else:
        v = view(site, node)
        if (
            v is None
            or v.receiver is not None
            or not isinstance(node, cst.Call)
            or len(node.args) < 2
        ):
            return
        num, den = node.args[0].value, node.args[1].value
    text = f"{site.spell('tensorflow.math.divide_no_nan')}({site.code(num)}, {site.code(den)})"
    new = expr(text)
    yield Edit(
        "stable-api",
        "divide-no-nan",
        "x / y -> tf.math.divide_no_nan(x, y): 0 where y is 0",
        node,
        new,
        site.take_imports(),
        (),
    )


@transform(
    "stable-api",
    "pow-abs",
    only("pow"),
    "x ** y -> x.abs() ** y, for a fractional y whose sign is meaningless",
)
def t_pow_abs(site: Site) -> Iterator[Edit]:
    """Catalogue: `x.abs() ** y` for a fractional power of a value whose sign is meaningless."""
    if site.request.op != "pow" or site.is_tf or "stable-api" not in catalogue_kinds("pow"):
        return
    exponent = pow_exponent(site)
    if not isinstance(exponent, cst.Float):
        return
    yield substitute_operand(
        site,
        lambda x: f"{atomic_text(site, x)}.abs()",
        "stable-api",
        "pow-abs",
        "x ** y -> x.abs() ** y for a fractional y",
    )
