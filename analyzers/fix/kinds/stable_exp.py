"""Stable APIs for exponentials: a normalised `exp` as `softmax`, `expm1`, and `tanh` for
a ratio of exponentials.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from analyzers.fix.kinds.common import statement_of, strip_parens, unwrap_call
from analyzers.fix.kinds.registry import only, transform
from analyzers.fix.site import Edit, Site, expr, flat, is_one, is_simple, sibling, view


def _normaliser_dim(site: Site, name: str, statement: cst.CSTNode) -> cst.BaseExpression | None:
    """The dim of `name / name.sum(dim, keepdim=True)` (or `torch.sum`, `tf.reduce_sum` with
    `keepdims=True`) in the statement right after `statement`, when there is one."""
    block = site.parent(statement)
    body = list(getattr(block, "body", ()))
    if statement not in body or body.index(statement) + 1 >= len(body):
        return None
    following = body[body.index(statement) + 1]
    found: list[cst.BaseExpression] = []

    class Division(cst.CSTVisitor):
        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            if (
                found
                or not isinstance(node.operator, cst.Divide)
                or not (isinstance(node.left, cst.Name) and node.left.value == name)
            ):
                return
            total = view(site, strip_parens(node.right))
            if total is None or total.name not in ("sum", "reduce_sum"):
                return
            summed = total.operand()
            if not (isinstance(summed, cst.Name) and summed.value == name):
                return
            keywords = {a.keyword.value: a.value for a in total.rest() if a.keyword is not None}
            plain = [a.value for a in total.rest() if a.keyword is None]
            dim = keywords.get("dim", keywords.get("axis", plain[0] if plain else None))
            keep = keywords.get(
                "keepdim", keywords.get("keepdims", plain[1] if len(plain) > 1 else None)
            )
            if dim is not None and keep is not None and site.code(keep) == "True":
                found.append(dim)

    following.visit(Division())
    return found[0] if found else None


def _exp_of(site: Site, node: cst.BaseExpression) -> str | None:
    """The flattened operand text of `exp(a)` (function or method), else None."""
    v = view(site, node)
    if v is None or v.spec is None or v.spec.op != "exp":
        return None
    operand = v.operand()
    return flat(site.code(operand)) if operand is not None else None


def _negated(text: str) -> str:
    """`-x` for `x` and `x` for `-x` (flattened)."""
    return text[1:] if text.startswith("-") else "-" + text


@transform(
    "stable-api",
    ("softmax", "softmax-float32"),
    only("exp"),
    "w = exp(s); w / w.sum(d) -> w = softmax(s, d)",
)
def t_exp_normalised(site: Site) -> Iterator[Edit]:
    """`w = exp(s)` normalised by `w / w.sum(dim, keepdim=True)` on the next line is a
    softmax written out: `w = softmax(s, dim)` is the fused API (shifted by the max, so exp
    cannot overflow); the division that follows then divides by 1 and can stay."""
    if site.request.op != "exp":
        return
    v = view(site, site.node)
    x = v.operand() if v is not None else None
    statement = statement_of(site, site.node)
    if (
        v is None
        or x is None
        or not isinstance(statement, cst.SimpleStatementLine)
        or len(statement.body) != 1
        or not isinstance(statement.body[0], cst.Assign)
    ):
        return
    assign = statement.body[0]
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if assign.value is not site.node or not isinstance(target, cst.Name):
        return
    dim = _normaliser_dim(site, target.value, statement)
    if dim is None:
        return
    if site.is_tf:
        text = f"{site.spell('tensorflow.nn.softmax')}({site.code(x)}, axis={site.code(dim)})"
    else:
        text = f"{site.spell('torch.softmax')}({site.code(x)}, dim={site.code(dim)})"
    yield Edit(
        "stable-api",
        "softmax",
        "exp(x) / exp(x).sum(dim) is softmax(x, dim): shifted by the max, it cannot overflow",
        site.node,
        expr(text),
        site.take_imports(),
    )
    if site.is_tf or not is_simple(x):
        return
    # float16 scores (a product that can pass 65504): the softmax in float32, cast back
    text = (
        f"{site.spell('torch.softmax')}({site.code(x)}.float(), dim={site.code(dim)})"
        f".to({site.code(x)}.dtype)"
    )
    yield Edit(
        "stable-api",
        "softmax-float32",
        "exp(x) / exp(x).sum(dim) is softmax(x, dim), computed in float32 and cast back",
        site.node,
        expr(text),
        site.take_imports(),
    )


@transform("stable-api", "expm1", only("exp"), "exp(x) - 1 -> expm1(x)")
def t_expm1(site: Site) -> Iterator[Edit]:
    node: cst.BaseExpression = site.node
    parent = site.parent(node)
    if (
        not isinstance(node, cst.BinaryOperation)
        and isinstance(parent, cst.BinaryOperation)
        and parent.left is node
    ):
        node = parent
    if not (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and is_one(node.right)
    ):
        return
    e = unwrap_call(site, node.left, "exp")
    if e is None:
        return
    x = e.operand()
    if x is None:
        return
    new: cst.BaseExpression
    if e.receiver is not None:
        func = e.node.func
        assert isinstance(func, cst.Attribute)
        new = e.node.with_changes(func=func.with_changes(attr=cst.Name("expm1")))
    else:
        canonical = "tensorflow.math.expm1" if site.is_tf else "torch.expm1"
        new = e.node.with_changes(func=expr(sibling(site, e, "expm1", canonical)))
    new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
    yield Edit(
        "stable-api",
        "expm1",
        "exp(x) - 1 -> expm1(x): exact for small x",
        node,
        new,
        site.take_imports(),
        ("expm1",),
    )


@transform("stable-api", "tanh", only("exp"), "(exp(x) - exp(-x)) / (exp(x) + exp(-x)) -> tanh(x)")
def t_tanh(site: Site) -> Iterator[Edit]:
    """(exp(x) - exp(-x)) / (exp(x) + exp(-x)) -> tanh(x): inf / inf is NaN for |x| above
    log(max), tanh is finite everywhere."""
    if site.request.op != "exp":
        return
    node: cst.CSTNode | None = site.node
    while node is not None and not (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)
    ):
        if isinstance(node, cst.BaseStatement):
            return
        node = site.parent(node)
    if not isinstance(node, cst.BinaryOperation):
        return
    top, bottom = node.left, node.right
    if not (
        isinstance(top, cst.BinaryOperation)
        and isinstance(top.operator, cst.Subtract)
        and isinstance(bottom, cst.BinaryOperation)
        and isinstance(bottom.operator, cst.Add)
    ):
        return
    a, b = _exp_of(site, top.left), _exp_of(site, top.right)
    c, d = _exp_of(site, bottom.left), _exp_of(site, bottom.right)
    if a is None or b is None or a != c or b != d or b != _negated(a):
        return
    first = view(site, top.left)
    operand = first.operand() if first is not None else None
    if operand is None:
        return
    name = "tensorflow.math.tanh" if site.is_tf else "torch.tanh"
    x = site.code(operand.with_changes(lpar=[], rpar=[]))  # exp(-x) first: tanh(-x)
    new = expr(f"{site.spell(name)}({x})").with_changes(lpar=node.lpar, rpar=node.rpar)
    yield Edit(
        "stable-api",
        "tanh",
        "(exp(x) - exp(-x)) / (exp(x) + exp(-x)) -> tanh(x): finite for any x",
        node,
        new,
        site.take_imports(),
        (),
    )
