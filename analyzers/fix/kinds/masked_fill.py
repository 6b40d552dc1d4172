"""Masked fills: a `-inf` fill replaced by the dtype's finite minimum, so a fully masked
row is not NaN after softmax.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from analyzers.fix.kinds.common import statement_of
from analyzers.fix.kinds.registry import only, transform
from analyzers.fix.site import (
    CallView,
    Edit,
    Site,
    dotted_name,
    expr,
    is_simple,
    operand_node,
    view,
)


def neg_inf(node: cst.BaseExpression) -> bool:
    """`float('-inf')`, `-float("inf")`, `-math.inf`, `-torch.inf`, `-np.inf`."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = node.expression
        if (
            isinstance(inner, cst.Call)
            and isinstance(inner.func, cst.Name)
            and inner.func.value == "float"
            and len(inner.args) == 1
            and isinstance(inner.args[0].value, cst.SimpleString)
        ):
            return str(inner.args[0].value.evaluated_value).lower() in ("inf", "infinity")
        dotted = dotted_name(inner)
        return dotted is not None and dotted.rsplit(".", 1)[-1] == "inf"
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "float"
        and len(node.args) == 1
        and isinstance(node.args[0].value, cst.SimpleString)
    ):
        return str(node.args[0].value.evaluated_value).lower() in ("-inf", "-infinity")
    return False


def _min_text(site: Site, base: str) -> str:
    if site.is_tf:
        return f"{base}.dtype.min"
    return f"{site.spell('torch.finfo')}({base}.dtype).min"


def _fills(site: Site, root: cst.CSTNode) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """masked_fill / where calls under `root` that put -inf in: (old, new) pairs."""
    out: list[tuple[cst.CSTNode, cst.CSTNode]] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in (
                "masked_fill",
                "masked_fill_",
            ):
                v = CallView(node, None, func.attr.value, func.value, None)
                value = v.arg(1, ("value",))
                if value is not None and neg_inf(value.value) and is_simple(func.value):
                    new_value = expr(_min_text(site, site.code(func.value)))
                    out.append((value.value, new_value))
                    return False
            v2 = view(site, node)
            if (
                v2 is not None
                and v2.spec is not None
                and v2.spec.op == "where"
                and len(node.args) >= 3
            ):
                for index in (1, 2):
                    other = node.args[3 - index].value
                    given = node.args[index].value
                    infinity = given if neg_inf(given) else _filled_with(given)
                    if infinity is not None and is_simple(other):
                        out.append((infinity, expr(_min_text(site, site.code(other)))))
                        return False
            return True

    root.visit(Finder())
    return out


def _filled_with(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The -inf of a constant fill, `tf.fill(shape, -np.inf)` or `torch.full(..., -inf)` /
    `full_like`, as the masked branch of a `where`; else None."""
    if not isinstance(node, cst.Call) or len(node.args) < 2:
        return None
    name = dotted_name(node.func)
    if name is None or name.rsplit(".", 1)[-1] not in ("fill", "full", "full_like"):
        return None
    value = node.args[1].value
    return value if neg_inf(value) else None


def _simple_lines(statement: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    """The simple statements in a statement, in source order (inside `if mask is not None:`
    too, where attention code usually fills)."""
    found: list[cst.SimpleStatementLine] = []

    class Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            found.append(node)
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    statement.visit(Lines())
    return found


def _fill_statement(
    site: Site, statement: cst.CSTNode, name: str
) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    if not isinstance(statement, cst.SimpleStatementLine):
        for line in reversed(_simple_lines(statement)):
            found = _fill_statement(site, line, name)
            if found:
                return found
        return []
    for small in statement.body:
        if isinstance(small, cst.Assign):
            targets = [site.code(t.target).strip() for t in small.targets]
            if name in targets:
                return _fills(site, small.value)
            for t in small.targets:  # scores[mask] = float('-inf')
                if (
                    isinstance(t.target, cst.Subscript)
                    and site.code(t.target.value).strip() == name
                    and neg_inf(small.value)
                ):
                    return [(small.value, expr(_min_text(site, name)))]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "masked_fill_"
                and site.code(func.value).strip() == name
            ):
                return _fills(site, small.value)
    return []


@transform(
    "masked-fill",
    "finfo-min",
    only("softmax"),
    "s.masked_fill(m, -inf) -> s.masked_fill(m, torch.finfo(s.dtype).min)",
)
def t_masked_fill(site: Site) -> Iterator[Edit]:
    if site.request.op != "softmax":
        return
    operand = operand_node(site)
    name = site.code(operand).strip()
    edits: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    # inline: softmax(s.masked_fill(m, -inf))
    for fill in _fills(site, operand):
        edits.append(fill)
    if not edits and is_simple(operand):
        statement = statement_of(site, site.node)
        block = site.parent(statement) if statement is not None else None
        body = getattr(block, "body", None)
        if isinstance(body, Sequence) and statement in body:
            for previous in reversed(list(body[: list(body).index(statement)])):
                found = _fill_statement(site, previous, name)
                if found:
                    edits = found
                    break
    if not edits:
        return
    old, new = edits[0]
    yield Edit(
        "masked-fill",
        "finfo-min",
        "fill masked scores with the dtype's lowest finite "
        "value instead of -inf: a fully masked row gives a uniform row, not 0/0",
        old,
        new,
        site.take_imports(),
    )
