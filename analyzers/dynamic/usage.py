"""What a function's body does with its parameters: which are sizes, which are indices.

A synthesised call gives every unannotated parameter a float tensor, and real code then stops
before the flagged op: pyro's `_unsafe_standard_stable(shape, alpha, beta)` passes `shape` to
`alpha.new_empty(shape)` ("argument 'size' must be tuple of ints, not Tensor"); PyG's
`agnn(x, edge_index, beta)` unpacks `row, col = edge_index` and indexes `x[row]` ("too many
values to unpack", then "tensors used as indices must be long"); jax-md indexes
`charges[nbr_inds]` ("Indexer must have integer or boolean type"). The body says what each
parameter is, so it is read, as branches.py reads the conditions: a parameter passed where a
size goes is a size, one used as a subscript or as the index of a gather/scatter is an
integer index, and one unpacked into N names has N rows. Its docstring is read too: one it
types as an integer is a count (docstrings.py).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

from analyzers.dynamic.docstrings import documented_integers
from analyzers.dynamic.namespaces import (
    MAX_FIELDS,
    Field,
    merged,
    namespace_parameters,
    passed_on,
    subscript_dims,
)

# methods and functions whose first argument is a size (`x.new_empty(shape)`,
# `torch.zeros(shape)`, `x.expand(shape)`)
SIZE_TAKERS = frozenset(
    {
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "expand",
        "reshape",
        "view",
        "broadcast_to",
        "zeros",
        "ones",
        "empty",
        "full",
        "rand",
        "randn",
        "Size",
    }
)
# methods whose argument at this position is an index tensor (`x.index_select(0, idx)`,
# `out.scatter_add_(0, idx, src)`), and the torch functions taking the tensor first
INDEX_ARGUMENT = {
    "index_select": 1,
    "gather": 1,
    "scatter": 1,
    "scatter_": 1,
    "scatter_add": 1,
    "scatter_add_": 1,
    "scatter_reduce": 1,
    "scatter_reduce_": 1,
    "index_add": 1,
    "index_add_": 1,
    "take": 0,
    "segment_sum": 1,
}
TORCH_FUNCTION_INDEX = {"index_select": 2, "gather": 2, "scatter_add": 2, "scatter": 2}
# how many calls down the attributes a namespace parameter's callees read are followed
CALLEE_DEPTH = 2


def parsed_function(fn: Any) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int] | None:
    """`fn`'s own definition, parsed from its source, and the line of its file where that
    source starts; None when there is no source to read (a builtin, a compiled function)."""
    try:
        lines, start = inspect.getsourcelines(inspect.unwrap(fn))
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, ValueError, RecursionError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    return tree.body[0], start


@dataclass
class ParameterUses:
    sizes: set[str] = field(default_factory=set)  # passed where a shape goes
    indices: set[str] = field(default_factory=set)  # used to index, gather or scatter
    rows: dict[str, int] = field(default_factory=dict)  # unpacked into this many names
    integers: frozenset[str] = frozenset()  # typed as integers by the docstring (docstrings.py)
    masks: set[str] = field(default_factory=set)  # operands of `&`, `|`, `~`: booleans
    # subscripted with this many indices at most (`body_3_inds[:, 0]`: 2)
    ranks: dict[str, int] = field(default_factory=dict)
    # read only as `p.name` (namespaces.py): {parameter: {attribute: its rank and use}}
    namespaces: dict[str, dict[str, Field]] = field(default_factory=dict)


def parameter_uses(fn: Any) -> ParameterUses:
    """The uses of `fn`'s parameters in its own body (nested functions and lambdas
    included: jax-md's `vmap(lambda i: ...)` indexes with the outer parameter too); empty
    when the source cannot be read."""
    uses = ParameterUses(integers=documented_integers(fn))
    parsed = parsed_function(fn)
    if parsed is None:
        return uses
    function, _ = parsed
    params = {
        a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    }
    aliases = {name: name for name in params}  # a name bound from a parameter: its parameter
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            _unpacked(node.targets[0], node.value, aliases, uses)
    for node in ast.walk(function):
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Name) and node.value.id in params:
                dims = subscript_dims(node)
                uses.ranks[node.value.id] = max(uses.ranks.get(node.value.id, 0), dims)
            for index in _index_names(node.slice):
                if index in aliases:
                    uses.indices.add(aliases[index])
        elif isinstance(node, ast.Call):
            _call(node, aliases, uses)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
            # `nbr_mask & (bo > 0)`: logical ops take booleans (JAX refuses floats)
            for side in (node.left, node.right):
                if isinstance(side, ast.Name) and side.id in aliases:
                    uses.masks.add(aliases[side.id])
        elif (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.Invert)
            and isinstance(node.operand, ast.Name)
            and node.operand.id in aliases
        ):
            uses.masks.add(aliases[node.operand.id])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                if (
                    isinstance(side, ast.Name)
                    and side.id in params
                    and isinstance(other, ast.Tuple)
                ):  # `shape + (1,)`
                    uses.sizes.add(side.id)
    uses.indices -= uses.sizes
    uses.masks -= uses.sizes | uses.indices
    bare = {
        a.arg
        for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
        if a.annotation is None
    }
    uses.namespaces = _namespaces(
        fn, function, bare - uses.sizes - uses.indices - uses.masks, CALLEE_DEPTH
    )
    return uses


def _namespaces(
    fn: Any, function: ast.FunctionDef | ast.AsyncFunctionDef, candidates: set[str], depth: int
) -> dict[str, dict[str, Field]]:
    """namespaces.namespace_parameters, with the attributes read off each namespace by the
    Python functions it is passed to whole by a name of `fn`'s module (its own or imported),
    `depth` calls down. A callee that uses it as something else adds nothing: the attributes
    this body reads are still needed."""
    found = namespace_parameters(function, candidates)
    if depth <= 0:
        return found
    scope = getattr(inspect.unwrap(fn), "__globals__", {})
    for name, fields in found.items():
        for callee_name, slot in passed_on(function, name):
            callee = scope.get(callee_name)
            parsed = parsed_function(callee) if inspect.isfunction(callee) else None
            if callee is fn or parsed is None:
                continue
            param = _parameter_at(parsed[0], slot)
            if param is not None:
                more = _namespaces(callee, parsed[0], {param}, depth - 1).get(param, {})
                fields = merged(fields, more)
        found[name] = fields
    return {name: fields for name, fields in found.items() if len(fields) <= MAX_FIELDS}


def _parameter_at(function: ast.FunctionDef | ast.AsyncFunctionDef, slot: int | str) -> str | None:
    """The parameter of `function` an argument at `slot` (a position or a keyword) binds."""
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if isinstance(slot, int):
        return positional[slot] if slot < len(positional) else None
    named = positional[len(function.args.posonlyargs) :] + [a.arg for a in function.args.kwonlyargs]
    return slot if slot in named else None


def _unpacked(
    target: ast.expr, value: ast.expr, aliases: dict[str, str], uses: ParameterUses
) -> None:
    """`row, col = edge_index`: two rows, and `row`, `col` stand for the parameter when
    they index; so does a part of it (`center = body_3_inds[:, 0]`: a subscript keeps its
    dtype, and jax-md then indexes `nbr_inds[center, ...]`); `x = x.unsqueeze(0)`-style
    rebinds are not followed."""
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Tuple)
        and len(target.elts) == len(value.elts)
    ):  # `center, neighbour = triplets[:, 0], triplets[:, 1]`: pair by pair
        for one_target, one_value in zip(target.elts, value.elts, strict=True):
            _unpacked(one_target, one_value, aliases, uses)
        return
    if (
        isinstance(target, ast.Name)
        and isinstance(value, ast.Subscript)
        and isinstance(value.value, ast.Name)
        and value.value.id in aliases
    ):
        aliases.setdefault(target.id, aliases[value.value.id])
        return
    if isinstance(value, ast.Name) and value.id in aliases:
        param = aliases[value.id]
        if isinstance(target, ast.Tuple | ast.List) and all(
            isinstance(e, ast.Name) for e in target.elts
        ):
            uses.rows[param] = len(target.elts)
            for element in target.elts:
                assert isinstance(element, ast.Name)
                aliases.setdefault(element.id, param)


def _index_names(index: ast.expr) -> list[str]:
    """The plain names a subscript indexes with: `x[row]`, `x[:, idx]`, and the names whose
    parts it indexes with (`ff.th0[species[center], ...]`: species holds indices); not
    slices' bounds (`x[:n]` is a size) nor names inside arithmetic."""
    names = []
    for element in index.elts if isinstance(index, ast.Tuple) else [index]:
        if isinstance(element, ast.Subscript):
            element = element.value
        if isinstance(element, ast.Name):
            names.append(element.id)
    return names


def _call(node: ast.Call, aliases: dict[str, str], uses: ParameterUses) -> None:
    func = node.func
    name = (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else ""
    )
    args = node.args
    if (
        name in SIZE_TAKERS
        and len(args) == 1
        and isinstance(args[0], ast.Name)
        and args[0].id in aliases
        and aliases[args[0].id] == args[0].id
    ):
        uses.sizes.add(args[0].id)
        return
    on_module = (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("torch", "jnp", "tf", "np")
    )
    position = TORCH_FUNCTION_INDEX.get(name) if on_module else INDEX_ARGUMENT.get(name)
    if position is None:
        return
    given = (
        args[position]
        if position < len(args)
        else next((k.value for k in node.keywords if k.arg in ("index", "indices")), None)
    )
    if isinstance(given, ast.Name) and given.id in aliases:
        uses.indices.add(aliases[given.id])


def reads_self(fn: Any) -> bool:
    """Whether a method's body uses its first parameter (`self`), or zero-argument `super()`
    (which reads it too); True when the source cannot be read. flax's
    `WeightNorm._split_param(self, param)` never does: whatever the object was built with
    cannot change what it computes, so it is called on an object no constructor ran for
    (objects.py), where the constructor needs another optimizer numcheck cannot make up."""
    parsed = parsed_function(fn)
    if parsed is None:
        return True
    function = parsed[0]
    positional = [*function.args.posonlyargs, *function.args.args]
    if not positional:
        return True
    name = positional[0].arg
    return any(
        isinstance(node, ast.Name) and node.id in (name, "super") for node in ast.walk(function)
    )


def isinstance_checks(fn: Any) -> dict[str, ast.expr]:
    """{parameter: the class expression} where the body refuses anything but instances of
    a class (`assert isinstance(base_dist, self.supported_types)`, `if not
    isinstance(kernel, Kernel): raise ...`): numpyro's `TwoSidedTruncatedDistribution
    (base_dist, ...)` takes a distribution, never a tensor. The expression is the
    caller's to resolve (objects.py: `self.x` on the class, a name in the function's
    globals)."""
    parsed = parsed_function(fn)
    if parsed is None:
        return {}
    checks: dict[str, ast.expr] = {}
    for node in ast.walk(parsed[0]):
        test = (
            node.test
            if isinstance(node, ast.Assert)
            else node.test.operand
            if isinstance(node, ast.If)
            and isinstance(node.test, ast.UnaryOp)
            and isinstance(node.test.op, ast.Not)
            and any(isinstance(s, ast.Raise) for s in node.body)
            else None
        )
        if (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and isinstance(test.args[0], ast.Name)
        ):
            checks.setdefault(test.args[0].id, test.args[1])
    return checks


def allowed_values(fn: Any) -> dict[str, Any]:
    """{parameter: the first value the body allows it} where the body checks a parameter
    against constants (`if nu not in [0.5, 1.5, 2.5]: raise ...`, `assert mode in ("a",
    "b")`, `if kind == "x":`): gpytorch's `MaternKernel(nu)` refuses anything else, so a
    constructor value made up without reading the check never builds it."""
    parsed = parsed_function(fn)
    if parsed is None:
        return {}
    allowed: dict[str, Any] = {}
    for node in ast.walk(parsed[0]):
        found = constant_comparison(node)
        if found is not None:
            allowed.setdefault(found[0], found[2])
    return allowed


def constant_comparison(node: ast.AST) -> tuple[str, ast.cmpop, Any] | None:
    """(name, operator, constant) for `name == const`, and for `name in (const, ...)` or
    `name not in [...]` with the first constant listed; None for any other expression."""
    if not (
        isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Name)
    ):
        return None
    op, right = node.ops[0], node.comparators[0]
    if (
        isinstance(op, ast.In | ast.NotIn)
        and isinstance(right, ast.Tuple | ast.List | ast.Set)
        and right.elts
        and isinstance(right.elts[0], ast.Constant)
    ):
        return node.left.id, op, right.elts[0].value
    if isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
        return node.left.id, op, right.value
    return None
