"""Risks a change creates on lines it does not touch.

A pull request adds `scores = scores.masked_fill(~mask, float("-inf"))`; the softmax two lines
below is unchanged, and now returns NaN for a fully masked row. Reviewing only the added lines
misses it. So a finding on an unchanged line is kept when, within the same function, an added
line assigns a name its operand reads (directly, or through unchanged assignments in between)
and that added line changes what the value can be: the finding's rule is definite (the -inf
fill reaching a softmax, a vanished epsilon), or the added line fills with -inf, casts to a
narrower dtype, or writes an epsilon. The review then comments on that added line and names
the op's line.

Plain data edits upstream (a renamed variable, a new scale factor) do not carry a finding down
to an unchanged line: that would comment on code the author did not change for reasons the
change did not create.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

# What an added line must do to a value for a risk below it to be the change's doing.
CHANGES_THE_RANGE = re.compile(
    r"inf\b|\.half\(|float16|bfloat16|\bhalf\b|autocast|masked_fill|\beps|1e-\d+|finfo"
)
MAX_HOPS = 3  # unchanged assignments followed back from the op


def _names(text: str) -> set[str]:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _function_at(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
            and (best is None or node.lineno > best.lineno)
        ):
            best = node  # the innermost
    return best


def _assignments(func: ast.AST) -> list[tuple[int, set[str], ast.stmt]]:
    """(line, names assigned, the statement) for every assignment in the function."""
    out: list[tuple[int, set[str], ast.stmt]] = []
    for node in ast.walk(func):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if names and isinstance(node, ast.stmt):
            out.append((node.lineno, names, node))
    return out


def feeding_line(
    tree: ast.Module,
    source_lines: list[str],
    op_line: int,
    operand: str,
    definite: bool,
    added: Collection[int],
) -> int | None:
    """The added line, nearest above `op_line` in its function, whose assignment reaches the
    operand and changes its range (see the module doc); None when there is none."""
    func = _function_at(tree, op_line)
    if func is None:
        return None
    assignments = sorted(_assignments(func), key=lambda item: item[0])
    wanted = _names(operand)
    below = op_line
    for _ in range(MAX_HOPS + 1):
        if not wanted:
            return None
        earlier = [a for a in assignments if a[0] < below and a[1] & wanted]
        if not earlier:
            return None
        line, _, stmt = earlier[-1]  # the assignment that reaches the op
        if line in added:
            text = source_lines[line - 1] if line - 1 < len(source_lines) else ""
            return line if definite or CHANGES_THE_RANGE.search(text) else None
        value = getattr(stmt, "value", None)  # unchanged: follow what it was computed from
        wanted = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} if value else set()
        below = line
    return None
