"""Parameters that are bags of tensors: a body that only reads `p.name` off a parameter.

jax-md's ReaxFF terms take `force_field` and read two dozen arrays off it
(`force_field.vval2[neigh1_types, cent_types, neigh2_types]`, `force_field.cutoff2`); a
configuration object (`cfg.eps`, `opts.temperature`) is the same shape of thing. Searched as
one float tensor, such a parameter stops the call at its first attribute (`'ArrayImpl' object
has no attribute 'stlp'`) and the flagged line is never reached. The body says what each
attribute is: read as `p.a[i, j, k]` it is an array of three dimensions, used as a subscript
(`x[p.idx]`) it is an integer index, and read bare it is a scalar, which broadcasts with any
operand. Each attribute becomes its own searched input, gathered into one namespace where the
argument goes (lists.SearchedList with `fields`), so the search perturbs the fitted values
themselves, as a parameter optimisation does.

A namespace passed on whole to a function called by name (`calculate_boncor_pot(...,
force_field)`) has the attributes that function reads off it too (usage.py follows the call),
or the call stops there at the first one (`no attribute 'bo131'`).

A parameter is a namespace only when every use of it is an attribute read or passing it on
whole: a method call on it (`p.sum()`), a tensor attribute (`p.shape`, `p.dtype`), a nested
read (`p.a.b`), arithmetic or a subscript on it makes it something else, and it is left as
it was. Reads the source only: imports nothing of the PR's code, nor a framework.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# what a tensor, an array or a module answers: a parameter read this way is a tensor (or an
# object with methods), not a bag of values
TENSOR_ATTRIBUTES = frozenset(
    {
        "T",
        "mT",
        "H",
        "at",
        "data",
        "device",
        "dtype",
        "grad",
        "imag",
        "is_cuda",
        "layout",
        "ndim",
        "real",
        "requires_grad",
        "shape",
        "size",
        "training",
    }
)
MAX_FIELDS = 64  # more than this is not a bag of values a search can perturb sensibly


@dataclass(frozen=True)
class Field:
    """One attribute read off a namespace parameter: its rank (the most subscripts it is
    read with; 0 for a scalar) and whether it is used as an index (an integer array)."""

    rank: int = 0
    index: bool = False


def namespace_parameters(
    function: ast.FunctionDef | ast.AsyncFunctionDef, candidates: set[str]
) -> dict[str, dict[str, Field]]:
    """{parameter: {attribute: Field}} for the `candidates` (unannotated parameters without a
    default, the caller's choice) that `function`'s body (nested functions and lambdas
    included) uses only as a namespace; attributes in first-read order."""
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(function):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    fields: dict[str, dict[str, Field]] = {name: {} for name in candidates}
    refused: set[str] = set()
    for node in _in_order(function):
        if not (isinstance(node, ast.Name) and node.id in fields and node.id not in refused):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Call) and node in parent.args:
            continue  # passed on whole: `helper(x, force_field)`
        if isinstance(parent, ast.keyword):
            continue  # `helper(force_field=force_field)`
        if not isinstance(parent, ast.Attribute) or not _plain_read(parent, parents):
            refused.add(node.id)
            continue
        fields[node.id] = merged(fields[node.id], {parent.attr: _field(parent, parents)})
    return {
        name: read
        for name, read in fields.items()
        if name not in refused and read and len(read) <= MAX_FIELDS
    }


def passed_on(function: ast.AST, name: str) -> list[tuple[str, int | str]]:
    """Where `function` passes its parameter `name` on whole to a function called by a plain
    name (`calculate_boncor_pot(nbr_inds, ..., force_field)`): (the callee's name, the
    argument's position or keyword), in source order. A position after a starred argument
    cannot be told, and is left out."""
    found: list[tuple[str, int | str]] = []
    for node in _in_order(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        for position, argument in enumerate(node.args):
            if isinstance(argument, ast.Starred):
                break
            if isinstance(argument, ast.Name) and argument.id == name:
                found.append((node.func.id, position))
        found.extend(
            (node.func.id, keyword.arg)
            for keyword in node.keywords
            if keyword.arg is not None
            and isinstance(keyword.value, ast.Name)
            and keyword.value.id == name
        )
    return found


def merged(fields: dict[str, Field], more: dict[str, Field]) -> dict[str, Field]:
    """Two readings of one namespace's attributes: each attribute's highest rank, an index
    where either reads it as one; `fields`' order first."""
    out = dict(fields)
    for attribute, read in more.items():
        seen = out.get(attribute, Field())
        out[attribute] = Field(max(seen.rank, read.rank), seen.index or read.index)
    return out


def _in_order(function: ast.AST) -> list[ast.AST]:
    """Every node of `function`, in source order (ast.walk goes breadth first)."""
    nodes = [n for n in ast.walk(function) if hasattr(n, "lineno")]
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


def _plain_read(attribute: ast.Attribute, parents: dict[ast.AST, ast.AST]) -> bool:
    """`p.a` read as a value: not a method called, not a tensor's attribute, not written
    (`p.a = ...` makes p an object the code mutates), not read further (`p.a.b`)."""
    if attribute.attr in TENSOR_ATTRIBUTES or attribute.attr.startswith("__"):
        return False
    if not isinstance(attribute.ctx, ast.Load):
        return False
    parent = parents.get(attribute)
    if isinstance(parent, ast.Call) and parent.func is attribute:
        return False
    return not isinstance(parent, ast.Attribute)


def _field(attribute: ast.Attribute, parents: dict[ast.AST, ast.AST]) -> Field:
    """What one read says: `p.a[i, j]` is rank 2, `p.a[i][j]` too, `x[p.a]` an index."""
    rank = 0
    node: ast.expr = attribute
    while True:
        parent = parents.get(node)
        if not (isinstance(parent, ast.Subscript) and parent.value is node):
            break
        rank += subscript_dims(parent)
        node = parent
    parent = parents.get(attribute)
    used_as_index = isinstance(parent, ast.Subscript) and parent.slice is attribute
    if isinstance(parent, ast.Tuple):
        grand = parents.get(parent)
        used_as_index = isinstance(grand, ast.Subscript) and grand.slice is parent
    return Field(rank, used_as_index)


def subscript_dims(subscript: ast.Subscript) -> int:
    """How many dimensions one subscript indexes: `x[i, j]` two, `x[i]` one."""
    index = subscript.slice
    return len(index.elts) if isinstance(index, ast.Tuple) else 1
