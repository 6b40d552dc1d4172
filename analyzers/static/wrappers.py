"""Functions that are an op under another name: `def safe_sqrt(x): return jnp.sqrt(x)`.

Such a function adds nothing to the op but a name (often a custom gradient: jax-md's
`safe_sqrt` exists for its JVP at 0). Whether its operand can leave the op's domain is decided
by each caller, not by the wrapper, so a proof found by calling the wrapper alone on made-up
inputs shows only the op's own domain (sqrt of a negative number is NaN): read by hand on a
real pull request, both such proofs were noise, while the callers passed squared distances.
The finding is still reported; `analyzers/trust.py` keeps it out of the inline comments.

A wrapper here is a module-level function or a method named for its op (one word of its
name is the op's: `safe_sqrt`, `log`, Keras's backend `exp`) whose whole body, docstring
aside, returns the flagged call itself, and whose flagged operand is one of its own
parameters, untouched. The name matters: `def new_loss(p): return torch.log(p)` has the same
shape, but it is a loss, whose callers pass probabilities that reach 0, and its proof is the
bug numcheck exists to show. Not a lambda nor a nested function either: those are called by
the function around them (`tree_map(lambda p: jnp.log(p), params)`), whose inputs the proof
then came from.
"""

from __future__ import annotations

import ast
import re


def _outer_function(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level function or method (of a module-level class) holding `line`."""
    for node in tree.body:
        members = node.body if isinstance(node, ast.ClassDef) else [node]
        for member in members:
            if isinstance(
                member, ast.FunctionDef | ast.AsyncFunctionDef
            ) and member.lineno <= line <= (member.end_lineno or member.lineno):
                return member
    return None


def _words(name: str) -> set[str]:
    """`safe_sqrt` -> {safe, sqrt}; `safeSqrt` -> {safe, sqrt}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {w.lower() for w in spaced.split("_") if w}


def _parameters(args: ast.arguments) -> set[str]:
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}


def _same(expression: ast.expr, text: str) -> bool:
    try:
        parsed = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return False
    return ast.dump(parsed) == ast.dump(expression)


def _returned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The expression a one-statement body returns (a docstring does not count)."""
    body = function.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def is_op_wrapper(tree: ast.Module, line: int, call: str, operand: str, op: str) -> bool:
    """Is the flagged `call` of `op` (at `line`) the whole of a function named for the op
    that applies it to one of its parameters (`operand`, a bare name)?"""
    name = operand.strip()
    if not name.isidentifier():
        return False
    function = _outer_function(tree, line)
    if (
        function is None
        or op.lower() not in _words(function.name)
        or name not in _parameters(function.args)
    ):
        return False
    returned = _returned(function)
    return returned is not None and _same(returned, call)
