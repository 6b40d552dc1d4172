"""How deep a file's tree goes, measured with CPython's `ast` before libcst sees the file.

libcst's native parser recurses on the C stack once per level of its tree and does not check
the depth: a tree deep enough overflows the stack and kills the process with SIGSEGV (a 60 KB
line `y = x and x and ... and x` does it). CPython's parser bounds most nesting itself (200
brackets, 100 indented blocks, about 3000 levels of `ast`), but not everything: `ast` keeps
`a and b and c` flat (one BoolOp with three values) and adjacent string literals as one
Constant, where libcst nests a node per operand. Past the C stack, deep trees also cost
quadratic parse time in libcst and overflow Python's recursion limit in libcst's code
generation and metadata passes (a RecursionError that reaches us as a KeyError out of the
position provider).

So the file's `ast` is measured here in libcst's terms, iteratively (no recursion of ours):
one level per `ast` node on the path from the module, plus `len(values) - 1` for a BoolOp and
`pieces - 1` for implicitly concatenated string literals. A file over `MAX_NESTING_LEVELS`,
or with a comparison chained past `MAX_CHAINED_COMPARISONS`, is a per-file error and is never
parsed by libcst.

How the limits were chosen (libcst 1.9, CPython 3.11, x86-64 Linux; each construct parsed in
a child process under `ulimit -s`, bisecting the depth where it dies):

* native stack per level: about 1.25 KiB for operator chains (`and`, `+`, `**`, `x()()`),
  1.4 KiB for `.a` / `[0]` chains, 1.6 KiB for `x if c else` chains, 2.4 KiB for `lambda:`
  chains, 7 KiB per nested bracket (`f(f(...))`, `[[...]]`) and 25 KiB per nested block
  (`if` in `if`). Under the default 8 MiB main-thread stack `and` chains die at 7,038 operands.
* Python recursion: with the default limit of 1000 frames, scanning a function that holds a
  chain fails with RecursionError between 300 and 400 levels (libcst's codegen and metadata
  visitors take two or three frames a level).
* time: libcst's parse of a 1,000-level `[0]` chain takes tens of seconds; 200 levels take
  0.1 s.

At 200 levels the costliest tree the bound admits (CPython's 100 blocks, the rest brackets)
needs about 3.2 MiB of native stack, and a 200-level operator chain about 250 KiB: within the
8 MiB a process's main thread has, with margin; and a file deeper than 60 levels is parsed on
a thread with a 64 MiB stack besides (`scanner.THREAD_PARSE_LEVELS`), for hosts whose stack
is smaller. Real code stays below: of the 13,638 files of
CPython 3.11's standard library and this project's installed site-packages, 13,154 measure
under 20 levels and 75 exceed 200, all generated tables (the codecs' 256-literal decoding
tables, pydoc's topics, sympy's expanded polynomials).
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

MAX_NESTING_LEVELS = 200
"""Levels of libcst's tree a file may reach (see the module's docstring for the measurements:
a chain at this depth needs ~250 KiB of native stack and under 0.1 s to parse, and leaves
room below Python's recursion limit for the passes after the parse)."""

MAX_CHAINED_COMPARISONS = 200
"""Operands of one chained comparison `a < b < c ...`. libcst keeps these flat, so they cost
no depth, but each one is a node every pass walks; nobody writes more than a handful."""

STRING_SPAN_CHECKED = 64
"""A string literal's source span shorter than this cannot hide many adjacent literals (each
takes at least two characters); longer spans are tokenized to count them."""


@dataclass(frozen=True)
class Depth:
    """What `measure` found: the deepest level (in libcst's terms) and where, the longest
    operator chain, and the longest chained comparison."""

    levels: int
    line: int
    chain: int = 0  # operands of the longest `and`/`or` or binary-operator chain
    chain_line: int = 0
    chain_word: str = ""
    comparisons: int = 0  # operands of the longest chained comparison
    comparison_line: int = 0

    def refusal(
        self,
        path: str,
        max_levels: int = MAX_NESTING_LEVELS,
        max_comparisons: int = MAX_CHAINED_COMPARISONS,
    ) -> str | None:
        """None when libcst may parse the file; else the per-file error, in words."""
        if self.levels > max_levels:
            where = "" if self.chain_line == self.line else f" on line {self.chain_line}"
            note = (
                f"; a chain of {self.chain:,} {self.chain_word}{where}" if self.chain > 50 else ""
            )
            return (
                f"{path}:{self.line}: too deeply nested for the static pass "
                f"({self.levels:,} levels; the limit is {max_levels:,}){note}; "
                "the file was not analysed"
            )
        if self.comparisons > max_comparisons:
            return (
                f"{path}:{self.comparison_line}: a comparison chains "
                f"{self.comparisons:,} operands, too long for the static pass (the limit "
                f"is {max_comparisons:,}); the file was not analysed"
            )
        return None


# `ast` nodes that are no node of libcst's (a Name's Load, an operator's kind)
_NO_NODE = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)
_BOOL = {ast.And: "`and` operands", ast.Or: "`or` operands"}


def measure(tree: ast.Module, source: str) -> Depth:
    """The depth of the tree libcst would build for `source` (parsed as `tree`)."""
    lines = source.splitlines(keepends=True)
    deepest, deepest_line = 0, 1
    chain, chain_word = 0, ""
    chain_node: ast.AST | None = None
    comparisons = 0
    comparison_node: ast.AST | None = None
    # (node, level of its parent, binary operators chained above it, inside an f-string,
    #  the line of the nearest node that has one)
    stack: list[tuple[ast.AST, int, int, bool, int]] = [(tree, 0, 0, False, 1)]
    while stack:
        node, level, binops, in_fstring, line = stack.pop()
        level += 1
        line = getattr(node, "lineno", line) or line
        if not in_fstring and _is_string(node):
            level += _string_pieces(node, lines) - 1
        if level > deepest:
            deepest, deepest_line = level, line
        step = 1  # libcst nests `a and b and c` as ((a and b) and c): n - 1 levels
        if isinstance(node, ast.BoolOp):
            step = max(1, len(node.values) - 1)
            if len(node.values) > chain:
                chain, chain_node = len(node.values), node
                chain_word = _BOOL.get(type(node.op), "boolean operands")
        elif isinstance(node, ast.BinOp):
            binops += 1
            if binops + 1 > chain:
                chain, chain_node, chain_word = binops + 1, node, "binary-operator operands"
        elif isinstance(node, ast.Compare) and len(node.ops) + 1 > comparisons:
            comparisons, comparison_node = len(node.ops) + 1, node
        inner = in_fstring or isinstance(node, ast.JoinedStr | ast.FormattedValue)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _NO_NODE):
                continue
            stack.append(
                (
                    child,
                    level + step - 1,
                    binops if isinstance(node, ast.BinOp) and isinstance(child, ast.BinOp) else 0,
                    inner,
                    line,
                )
            )
    return Depth(
        deepest,
        deepest_line,
        chain,
        _line(chain_node),
        chain_word,
        comparisons,
        _line(comparison_node),
    )


def _line(node: ast.AST | None) -> int:
    return int(getattr(node, "lineno", 1) or 1)


def _is_string(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
    )


def _string_pieces(node: ast.AST, lines: list[str]) -> int:
    """How many literals `"a" "b" f"c"` make up this one `ast` string (libcst nests one
    ConcatenatedString per literal)."""
    start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if (
        start is None
        or end is None
        or col is None
        or end_col is None
        or not 0 < start <= end <= len(lines)
    ):
        return 1
    if start == end and end_col - col < STRING_SPAN_CHECKED:
        return 1
    first = lines[start - 1].encode("utf-8")
    if start == end:
        text = first[col:end_col].decode("utf-8", "replace")
    else:
        text = (
            first[col:].decode("utf-8", "replace")
            + "".join(lines[start : end - 1])
            + lines[end - 1].encode("utf-8")[:end_col].decode("utf-8", "replace")
        )
    if len(text) < STRING_SPAN_CHECKED:
        return 1
    kinds = {tokenize.STRING}
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # 3.12: f-strings in pieces
    if fstring_start is not None:
        kinds.add(fstring_start)
    try:
        tokens = tokenize.generate_tokens(io.StringIO(f"({text})").readline)
        return max(1, sum(1 for t in tokens if t.type in kinds))
    except (tokenize.TokenError, SyntaxError):
        return 1
