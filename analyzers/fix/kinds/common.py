"""Helpers more than one fix kind uses: reading the site's statements and assignments,
unwrapping calls, the kinds an op's catalogue entry allows, TensorFlow spellings.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from analyzers.catalogue import CATALOGUE
from analyzers.fix.site import CallView, Site, view


def unwrap_call(site: Site, node: cst.BaseExpression, op: str) -> CallView | None:
    """`node` as a call of `op`, or a name assigned one earlier in the same block
    (`p = torch.sigmoid(z)` ... `torch.log(p)`) whose inputs are not reassigned since."""
    v = view(site, node)
    if v is not None and v.spec is not None and v.spec.op == op:
        return v
    if not isinstance(node, cst.Name):
        return None
    assigned = assignment(site, node.value)
    if assigned is None:
        return None
    v = view(site, assigned)
    return v if v is not None and v.spec is not None and v.spec.op == op else None


def assignment(site: Site, name: str) -> cst.BaseExpression | None:
    statement = statement_of(site, site.node)
    block = site.parent(statement) if statement is not None else None
    body = getattr(block, "body", None)
    if statement is None or not isinstance(body, Sequence) or statement not in body:
        return None
    before = list(body[: list(body).index(statement)])
    for i in range(len(before) - 1, -1, -1):
        stmt = before[i]
        targets = assigned_names(stmt)
        if name not in targets:
            continue
        if not (
            isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Assign)
            and len(stmt.body[0].targets) == 1
            and isinstance(stmt.body[0].targets[0].target, cst.Name)
        ):
            return None
        value = stmt.body[0].value
        used = names_in(value)
        if any(used & assigned_names(later) for later in before[i + 1 :]):
            return None  # an input of the producer changed in between
        return value
    return None


def names_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    node.visit(Names())
    return names


def assigned_names(statement: cst.CSTNode) -> set[str]:
    """Names a statement may rebind (compound statements: every name bound inside)."""
    names: set[str] = set()

    class Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(names_in(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(names_in(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(names_in(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(names_in(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            names.update(names_in(node.target))

    statement.visit(Targets())
    return names


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[], rpar=[]) if node.lpar else node


def pow_exponent(site: Site) -> cst.BaseExpression | None:
    node = site.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        return node.right
    v = view(site, node)
    if v is not None:
        arg = v.arg(0 if v.receiver is not None else 1, ("exponent",))
        return arg.value if arg is not None else None
    return None


def catalogue_kinds(op: str) -> frozenset[str]:
    """The fix kinds the catalogue lists for an op: the generic domain fixes (epsilon, clamp,
    where) are tried only where it lists them."""
    spec = CATALOGUE.by_op.get(op)
    return spec.fix_kinds() if spec is not None else frozenset()


# Calls whose result is >= 0 by their catalogue entry's output range (abs, square, relu, a
# norm, exp, softmax, a standard deviation, ...), less those that return a tuple.
TUPLE_RESULTS = frozenset({"std_mean", "var_mean", "moments"})
NONNEG_LEAVES = (
    frozenset(
        name
        for spec in CATALOGUE.entries
        if spec.output is not None and spec.output[0] >= 0
        for name in spec.leaf_names()
    )
    - TUPLE_RESULTS
)


def syntactically_nonneg(site: Site, node: cst.BaseExpression) -> bool:
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Power)
        and isinstance(node.right, cst.Integer)
        and node.right.evaluated_value % 2 == 0
    ):
        return True
    v = view(site, node)
    if v is None:
        return False
    if v.name in ("sum", "mean", "reduce_sum", "reduce_mean"):
        inner = v.operand()
        return inner is not None and syntactically_nonneg(site, inner)
    return v.name in NONNEG_LEAVES


def tf_call(site: Site, name: str, *args: str) -> str:
    return f"{site.spell('tensorflow.' + name)}({', '.join(args)})"


def statement_of(site: Site, node: cst.CSTNode) -> cst.CSTNode | None:
    current: cst.CSTNode | None = node
    while current is not None and not isinstance(
        current, cst.SimpleStatementLine | cst.BaseCompoundStatement
    ):
        current = site.parent(current)
    return current
