"""What a condition tells us about a variable: `if`, `assert` and `where` guards.

`(x > 0).all()`, `torch.all(x > 0)`, `x.min() > 0`, `assert x.gt(0).all()` and the early exit
`if (x <= 0).any(): raise ...` all say the same thing about `x`; this module turns each into a
lower or upper bound on a named variable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

ALL_FUNCS = ("all", "reduce_all")
ANY_FUNCS = ("any", "reduce_any")
MIN_FUNCS = ("min", "amin", "reduce_min", "nanmin")
MAX_FUNCS = ("max", "amax", "reduce_max", "nanmax")
COMPARE_METHODS = {
    "gt": ">",
    "ge": ">=",
    "lt": "<",
    "le": "<=",
    "greater": ">",
    "greater_equal": ">=",
    "less": "<",
    "less_equal": "<=",
}
FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
NEGATE = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}


@dataclass(frozen=True)
class Fact:
    """`name` is above `lo` (or below `hi`) everywhere the guarded code runs."""

    name: str
    lo: float | None = None
    lo_open: bool = False
    hi: float | None = None
    nonzero: bool = False


ConstEval = Callable[[cst.BaseExpression], float | None]


def _leaf(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


def _strip(node: cst.BaseExpression) -> cst.BaseExpression:
    """Drop `.item()`, `bool(...)` and parentheses, which do not change the fact."""
    while True:
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "item"
            and not node.args
        ):
            node = node.func.value
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == "bool"
            and len(node.args) == 1
        ):
            node = node.args[0].value
        else:
            return node


def _reduced(call: cst.Call) -> cst.BaseExpression | None:
    """The tensor a reduction call reads: `x.min()`/`x.min(0)` or `torch.min(x)`."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return call.args[0].value if call.args else None
    receiver = func.value
    module_like = (
        isinstance(receiver, cst.Name | cst.Attribute)
        and call.args
        and call.args[0].keyword is None
        and isinstance(receiver, cst.Name)
        and receiver.value in MODULE_ALIASES
    )
    if module_like:
        return call.args[0].value
    return receiver


MODULE_ALIASES = frozenset(
    {"torch", "tf", "np", "jnp", "numpy", "jax", "K", "ops", "keras", "tensorflow"}
)


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`x` or `self.scale` (a guarded value's key in the environment), `torch.nn.functional`
    (a callee to resolve); None for anything else."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        return ".".join([node.value, *reversed(parts)])
    return None


def _subject(node: cst.BaseExpression) -> tuple[str, str] | None:
    """(variable, how): how is 'each', 'min' or 'max' of that variable."""
    node = _strip(node)
    dotted = dotted_name(node)
    if dotted is not None:
        return dotted, "each"
    if isinstance(node, cst.Call):
        leaf = _leaf(node.func)
        target = _reduced(node)
        name = dotted_name(target) if target is not None else None
        if name is not None and leaf in MIN_FUNCS:
            return name, "min"
        if name is not None and leaf in MAX_FUNCS:
            return name, "max"
    return None


def _fact(subject: tuple[str, str], op: str, bound: float) -> list[Fact]:
    name, how = subject
    if op in (">", ">=") and how in ("each", "min"):
        return [Fact(name, lo=bound, lo_open=op == ">")]
    if op in ("<", "<=") and how in ("each", "max"):
        return [Fact(name, hi=bound)]
    return []


def _comparison(node: cst.Comparison, holds: bool, const: ConstEval) -> list[Fact]:
    facts: list[Fact] = []
    left = node.left
    for target in node.comparisons:
        op = target.operator.__class__.__name__
        symbol = {
            "GreaterThan": ">",
            "GreaterThanEqual": ">=",
            "LessThan": "<",
            "LessThanEqual": "<=",
        }.get(op)
        right = target.comparator
        if op in ("NotEqual", "Equal") and len(node.comparisons) == 1:
            if (op == "NotEqual") == holds:
                facts += _not_zero(left, right, const)
            return facts
        if symbol is not None:
            if not holds:
                if len(node.comparisons) > 1:
                    return []
                symbol = NEGATE[symbol]
            facts += _oriented(left, symbol, right, const)
        elif not holds:
            return []
        left = right
    return facts


def _oriented(
    left: cst.BaseExpression, symbol: str, right: cst.BaseExpression, const: ConstEval
) -> list[Fact]:
    subject, bound = _subject(left), const(right)
    if subject is not None and bound is not None:
        return _fact(subject, symbol, bound)
    subject, bound = _subject(right), const(left)
    if subject is not None and bound is not None:
        return _fact(subject, FLIP[symbol], bound)
    return []


def _not_zero(left: cst.BaseExpression, right: cst.BaseExpression, const: ConstEval) -> list[Fact]:
    for subject_node, other in ((left, right), (right, left)):
        subject = _subject(subject_node)
        if subject is not None and subject[1] == "each" and const(other) == 0.0:
            return [Fact(subject[0], nonzero=True)]
    return []


def facts_from(test: cst.BaseExpression, holds: bool, const: ConstEval) -> list[Fact]:
    """The facts that follow when `test` is known to be `holds`."""
    test = _strip(test)
    if isinstance(test, cst.BooleanOperation):
        is_and = isinstance(test.operator, cst.And)
        if is_and == holds:  # `a and b` true, or `a or b` false: both sides hold
            return facts_from(test.left, holds, const) + facts_from(test.right, holds, const)
        return []
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return facts_from(test.expression, not holds, const)
    if isinstance(test, cst.Comparison):
        return _comparison(test, holds, const)
    if isinstance(test, cst.Call):
        leaf = _leaf(test.func)
        inner = _reduced(test)
        if leaf in ALL_FUNCS and inner is not None:
            return facts_from(inner, True, const) if holds else []
        if leaf in ANY_FUNCS and inner is not None:
            return facts_from(inner, False, const) if not holds else []
        if (
            leaf in ("ne", "not_equal")
            and isinstance(test.func, cst.Attribute)
            and len(test.args) == 1
            and holds
        ):
            return _not_zero(test.func.value, test.args[0].value, const)
        if leaf in COMPARE_METHODS and isinstance(test.func, cst.Attribute) and len(test.args) == 1:
            symbol = COMPARE_METHODS[leaf] if holds else NEGATE[COMPARE_METHODS[leaf]]
            return _oriented(test.func.value, symbol, test.args[0].value, const)
    return []


def refine(lo: float, hi: float, lo_open: bool, fact: Fact) -> tuple[float, float, bool]:
    """Bounds after the fact; `Fact.nonzero` is applied by the caller (it is not a bound)."""
    if fact.lo is not None and (fact.lo > lo or (fact.lo == lo and fact.lo_open)):
        lo, lo_open = fact.lo, fact.lo_open
    if fact.hi is not None and fact.hi < hi:
        hi = fact.hi
    if lo > hi and not math.isinf(lo):
        hi = lo
    return lo, hi, lo_open


def compared_names(cond: cst.BaseExpression) -> list[str]:
    """The variables a `where` mask compares (`h == 0`, `(x > 0) & (y < 1)`): the mask is
    elementwise, so each of them is a tensor, whatever the analysis knew of it before."""
    names: list[str] = []
    stack = [cond]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Comparison):
            sides = [node.left, *(c.comparator for c in node.comparisons)]
            names += [side.value for side in map(_strip, sides) if isinstance(side, cst.Name)]
        elif isinstance(node, cst.BinaryOperation | cst.BooleanOperation):
            stack += [node.left, node.right]
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
    return names
