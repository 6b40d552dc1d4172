"""Which values of a function's flag parameters lead to a line.

A synthesised call passes each non-tensor parameter its default, so an op under the other
branch of a flag is never reached: pyro's `get_probs_and_logits(ps=None, logits=None,
is_multidimensional=True)` takes `torch.log(ps) - torch.log1p(-ps)` only when
`is_multidimensional` is False, and the call with the defaults ended `never reached line`.
torchmetrics' `_jaccard_index_reduce(confmat, average)` divides at the bug's line only under
`if average == "binary":`. The conditions that enclose the line are read from the function's
own source: `if flag:`, `if not flag:`, `if mode == "binary":`, `if mode in ("a", "b"):` and
`and`/`or` chains of those, each giving a value the line needs.

An exponent is read the same way (`exponent_values`): a float parameter that is the exponent
of a power on the line (`torch.pow(1 - p, gamma)`, `(1 - p_t) ** gamma`) is given
`FRACTIONAL_EXPONENT` instead of its default. `x ** p` fails only for some exponents: with
0 < p < 1 its derivative is infinite at x = 0, which a default of 2.0 never shows (kornia's and
optax's focal losses, fixed for `gamma < 1`). The value is passed by keyword in the
reproducer, so the reader sees it and judges whether callers pass such an exponent.
"""

from __future__ import annotations

import ast
from typing import Any

from analyzers.dynamic.usage import constant_comparison, parsed_function

FRACTIONAL_EXPONENT = 0.5  # inside (0, 1): where x ** p has an infinite derivative at 0
POWER_FUNCTIONS = frozenset({"pow", "power", "float_power"})


def branch_values(fn: Any, line: int) -> dict[str, Any]:
    """{parameter: a value the path to `line` needs} for the plain names the `if` statements
    around `line` (a line of the function's file) test: a truth value for a flag, the constant
    a mode is compared with; {} when the source cannot be read or the line is outside the
    function."""
    parsed = parsed_function(fn)
    if parsed is None:
        return {}
    function = parsed[0]
    params = {
        a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    }
    return {name: value for name, value in path_values(fn, line).items() if name in params}


def path_values(fn: Any, line: int) -> dict[str, Any]:
    """{name: a value the path to `line` needs} for every plain name the enclosing `if`
    statements test, the function's parameters or not: PyG's `DegreeScalerAggregation`
    loops `for scaler in self.scaler:` and divides under `elif scaler == 'attenuation':`,
    a value its constructor's own `scaler` parameter takes (objects.py)."""
    parsed = parsed_function(fn)
    if parsed is None:
        return {}
    function, start = parsed
    needs: dict[str, Any] = {}
    _visit(function.body, line - start + 1, needs)  # the line in the parsed text
    return needs


def _visit(body: list[ast.stmt], line: int, needs: dict[str, Any]) -> None:
    for stmt in body:
        if not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return  # its own parameters, not the function's
        if isinstance(stmt, ast.If):
            inside = _within(stmt.body, line)
            if inside or _within(stmt.orelse, line):
                _condition(stmt.test, inside, needs)
                _visit(stmt.body if inside else stmt.orelse, line, needs)
            return
        for field in ("body", "orelse", "finalbody", "handlers"):
            nested = getattr(stmt, field, None)
            if isinstance(nested, list) and nested and isinstance(nested[0], ast.AST):
                _visit(
                    [n for n in nested if isinstance(n, ast.stmt)]
                    + [s for h in nested if isinstance(h, ast.ExceptHandler) for s in h.body],
                    line,
                    needs,
                )
        return


def _within(body: list[ast.stmt], line: int) -> bool:
    return bool(body) and body[0].lineno <= line <= (body[-1].end_lineno or body[-1].lineno)


def _condition(test: ast.expr, value: bool, needs: dict[str, Any]) -> None:
    """What `test` being `value` says about plain names."""
    if isinstance(test, ast.Name):
        needs.setdefault(test.id, value)
    elif isinstance(test, ast.Compare) and value:
        found = constant_comparison(test)
        if found is not None and isinstance(found[1], ast.Eq | ast.In):
            needs.setdefault(found[0], found[2])
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        _condition(test.operand, not value, needs)
    elif isinstance(test, ast.BoolOp) and (isinstance(test.op, ast.And) == value):
        for operand in test.values:  # all true for `and`, all false for a false `or`
            _condition(operand, value, needs)


def exponent_values(fn: Any, line: int) -> dict[str, Any]:
    """{parameter: FRACTIONAL_EXPONENT} for the parameters that are the exponent of a power
    on `line` (`a ** p`, `torch.pow(a, p)`, `np.power(a, p)`, `a.pow(p)`); {} when the
    source cannot be read. Whether the parameter's default is a float is the caller's check
    (signatures.fits), so an `int` exponent keeps its default."""
    parsed = parsed_function(fn)
    if parsed is None:
        return {}
    function, start = parsed
    wanted = line - start + 1
    params = {
        a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    }
    found: dict[str, Any] = {}
    for node in ast.walk(function):
        exponent = _exponent(node)
        if (
            isinstance(exponent, ast.Name)
            and exponent.id in params
            and exponent.lineno <= wanted <= (exponent.end_lineno or exponent.lineno)
        ):
            found[exponent.id] = FRACTIONAL_EXPONENT
    return found


def _exponent(node: ast.AST) -> ast.expr | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return node.right
    if not isinstance(node, ast.Call):
        return None
    name = (
        node.func.attr
        if isinstance(node.func, ast.Attribute)
        else node.func.id
        if isinstance(node.func, ast.Name)
        else ""
    )
    if name not in POWER_FUNCTIONS:
        return None
    keyword = next((k.value for k in node.keywords if k.arg in ("exponent", "x2")), None)
    if keyword is not None:
        return keyword
    method = isinstance(node.func, ast.Attribute) and len(node.args) == 1  # a.pow(p)
    return node.args[0] if method else node.args[1] if len(node.args) >= 2 else None
