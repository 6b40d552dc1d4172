"""Where a fix applies: the finding's node found again in the parsed file, and what the
transforms need around it.

`FixRequest` is what the fix pass needs of a finding. `parse_site` parses the file with libcst,
finds the flagged node by the finding's position (else by its call text on its lines), and
returns a `Site` with the node's parents, the file's imports (so `import torch as t` and
`import torch.nn.functional as F` are both honoured when a fix names a function; an import is
added only when no existing name reaches it), and helpers to read calls and to put a new
expression in place of the operand with the parentheses its slot needs.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from analyzers.catalogue import CATALOGUE, FixKind, OpSpec
from analyzers.dtypes import precision_failure
from analyzers.fix import bounds
from analyzers.static.conditions import dotted_name
from analyzers.static.prefilter import ImportMap
from analyzers.static.rules import RuleId

TF_FRAMEWORKS = ("tensorflow", "keras")
COMPAT = ("tensorflow.compat.v1", "tensorflow.compat.v2")
# Names the fixes call that the catalogue does not list (it lists risky ops and guards).
KNOWN_EXTRA = frozenset(
    {
        "torch.nn.functional.binary_cross_entropy_with_logits",
        "torch.nn.BCEWithLogitsLoss",
        "tensorflow.math.divide_no_nan",
        "torch.finfo",
        "torch.ones_like",
        "torch.zeros_like",
        "torch.full_like",
    }
)


def flat(text: str) -> str:
    return "".join(text.split())


@dataclass(frozen=True)
class FixRequest:
    """What the fix pass needs of a finding (a `Finding` or its JSON have all of it)."""

    path: str
    line: int
    end_line: int
    op: str
    call: str
    operand: str
    framework: str = "torch"
    rule: str = ""
    column: int = -1
    end_column: int = -1
    dtype: str = bounds.DEFAULT_DTYPE
    lo: float | None = None  # the operand's interval, when the static pass knew it
    hi: float | None = None

    @classmethod
    def from_finding(cls, finding: object) -> FixRequest:
        """From a `Finding` or its JSON dict."""
        data: dict[str, Any] = finding if isinstance(finding, dict) else finding.to_json()  # type: ignore[attr-defined]
        interval = data.get("interval") or {}

        def num(value: Any) -> float | None:
            return None if value is None else float(value)  # "inf" and "-inf" too

        dtype = bounds.dtype_name(interval.get("dtype") or data.get("dtype"))
        if data.get("rule") == RuleId.EPS_UNDERFLOW_FP16:
            dtype = "float16"  # the finding is about what the code does in half precision
        failing = precision_failure(data.get("trigger"))
        if failing is not None:
            dtype = failing  # a precision finding is fixed for the precision it fails in
        return cls(
            path=data["path"],
            line=int(data["line"]),
            end_line=int(data.get("end_line") or data["line"]),
            op=data["op"],
            call=data.get("call", ""),
            operand=data.get("operand", ""),
            framework=data.get("framework", "torch"),
            rule=data.get("rule", ""),
            column=int(data.get("column", -1)),
            end_column=int(data.get("end_column", -1)),
            dtype=dtype,
            lo=num(interval.get("lo")),
            hi=num(interval.get("hi")),
        )

    @property
    def is_tf(self) -> bool:
        return self.framework in TF_FRAMEWORKS

    @property
    def nonnegative(self) -> bool:
        return self.lo is not None and self.lo >= 0


@dataclass(frozen=True)
class Edit:
    """Replace `old` (a node of the parsed file) by `new`; `imports` are statements to add."""

    kind: FixKind
    name: str
    description: str
    old: cst.CSTNode
    new: cst.CSTNode
    imports: tuple[str, ...] = ()
    watch: tuple[str, ...] = ()  # risky ops left on the patched lines, for the re-search


class Unsupported(Exception):
    """The transform does not apply here."""


# ---------------------------------------------------------------------------------- the site


@dataclass
class Site:
    module: cst.Module
    positions: dict[cst.CSTNode, CodeRange]
    parents: dict[cst.CSTNode, cst.CSTNode]
    imports: ImportMap
    request: FixRequest
    node: cst.BaseExpression
    _needed: list[str] = field(default_factory=list)

    # ---- source text
    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    # ---- names
    def qual(self, func: cst.BaseExpression) -> str | None:
        """`t.nn.functional.softmax` -> `torch.nn.functional.softmax` (None for a method on
        a value, or a name no import binds)."""
        dotted = dotted_name(func)
        if dotted is None:
            return None
        resolved = self.imports.resolve(dotted)
        if resolved is None:
            return None
        for prefix in COMPAT:
            if resolved.startswith(prefix + "."):
                resolved = "tensorflow." + resolved[len(prefix) + 1 :]
        return resolved

    def spell(self, qual: str) -> str:
        """How this file reaches `qual` (through the most specific import), adding an import
        of the framework's root when none does."""
        best: tuple[int, str] | None = None
        for local, target in self.imports.names.items():
            for base in _targets(target):
                if qual == base or qual.startswith(base + "."):
                    text = local + qual[len(base) :]
                    if best is None or len(base) > best[0]:
                        best = (len(base), text)
        if best is not None:
            return best[1]
        root, _, rest = qual.partition(".")
        alias = {"tensorflow": "tf"}.get(root, root)
        if alias in self.imports.names:
            raise Unsupported(f"{alias} is bound to something else")
        statement = f"import {root}" if alias == root else f"import {root} as {alias}"
        if statement not in self._needed:
            self._needed.append(statement)
        return f"{alias}.{rest}" if rest else alias

    def take_imports(self) -> tuple[str, ...]:
        needed, self._needed = tuple(self._needed), []
        return needed

    def prefix(self) -> str:
        return "tensorflow" if self.is_tf else "torch"

    @property
    def is_tf(self) -> bool:
        """From the names the flagged code calls (a file may import both frameworks)."""
        roots: list[str] = []

        class Names(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                qual = site.qual(node.func)
                if qual is not None:
                    roots.append(qual.split(".", 1)[0])

        site = self
        self.node.visit(Names())
        for root in roots:
            if root in ("tensorflow", "keras"):
                return True
            if root == "torch":
                return False
        return self.request.is_tf


def _targets(target: str) -> tuple[str, ...]:
    for prefix in COMPAT:
        if target == prefix:
            return ("tensorflow",)
        if target.startswith(prefix + "."):
            return ("tensorflow." + target[len(prefix) + 1 :],)
    return (target,)


def parse_site(source: str, request: FixRequest) -> Site:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = dict(wrapper.resolve(PositionProvider))
    parents = dict(wrapper.resolve(ParentNodeProvider))
    imports = ImportMap()
    for stmt in ast.walk(ast.parse(source)):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            imports.add(stmt)
    node = _locate(module, positions, request)
    return Site(module, positions, parents, imports, request, node)


def _locate(
    module: cst.Module, positions: dict[cst.CSTNode, CodeRange], request: FixRequest
) -> cst.BaseExpression:
    exact: list[cst.BaseExpression] = []
    by_text: list[tuple[int, cst.BaseExpression]] = []
    want = flat(request.call)
    for node, where in positions.items():
        if not isinstance(node, cst.Call | cst.BinaryOperation):
            continue
        if (
            where.start.line == request.line
            and where.start.column == request.column
            and where.end.line == request.end_line
            and where.end.column == request.end_column
        ):
            exact.append(node)
        elif (
            request.line <= where.start.line <= request.end_line
            and flat(module.code_for_node(node)) == want
        ):
            by_text.append((abs(where.start.column - request.column), node))
    if exact:
        return exact[0]
    if by_text:
        return min(by_text, key=lambda item: item[0])[1]
    raise LookupError(f"{request.path}:{request.line}: `{request.call}` is not there")


# ---------------------------------------------------------------------------------- helpers


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def is_one(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return node.evaluated_value == 1
    if isinstance(node, cst.Float):
        return node.evaluated_value == 1.0
    return False


ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.List,
    cst.Tuple,
    cst.Dict,
)


def atomic(node: cst.BaseExpression) -> cst.BaseExpression:
    """The node, in parentheses where it would not bind as a method receiver or an operand."""
    if isinstance(node, ATOMS) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def atomic_text(site: Site, node: cst.BaseExpression) -> str:
    return site.code(atomic(node))


def is_simple(node: cst.BaseExpression) -> bool:
    """Cheap and side-effect free: fine to write twice."""
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return is_simple(node.value)
    return False


@dataclass
class CallView:
    """A call seen as `qual(args)` (function) or `receiver.name(args)` (method)."""

    node: cst.Call
    qual: str | None
    name: str
    receiver: cst.BaseExpression | None
    spec: OpSpec | None

    def arg(self, index: int, keywords: Sequence[str] = ()) -> cst.Arg | None:
        for a in self.node.args:
            if a.keyword is not None and a.keyword.value in keywords:
                return a
        positional = [a for a in self.node.args if a.keyword is None and not a.star]
        return positional[index] if index < len(positional) else None

    def operand(self) -> cst.BaseExpression | None:
        """The tensor the op works on: the receiver of a method, else its first argument."""
        if self.receiver is not None:
            return self.receiver
        first = self.arg(0, ("input", "x", "logits", "features"))
        return first.value if first is not None else None

    def rest(self) -> list[cst.Arg]:
        """The arguments after the operand (all of them for a method)."""
        if self.receiver is not None:
            return list(self.node.args)
        operand = self.arg(0, ("input", "x", "logits", "features"))
        return [a for a in self.node.args if a is not operand]


def view(site: Site, node: cst.BaseExpression) -> CallView | None:
    if not isinstance(node, cst.Call):
        return None
    qual = site.qual(node.func)
    if qual is not None:
        found = CATALOGUE.lookup(qual)
        return CallView(node, qual, qual.rsplit(".", 1)[-1], None, found[0] if found else None)
    if isinstance(node.func, cst.Attribute):
        name = node.func.attr.value
        return CallView(node, None, name, node.func.value, CATALOGUE.method(name))
    return None


def sibling(site: Site, v: CallView, leaf: str, canonical: str) -> str:
    """The same family's function with another name (`F.softmax` -> `F.log_softmax`), when it
    exists; else the canonical name as this file spells it."""
    if v.qual is not None and isinstance(v.node.func, cst.Attribute | cst.Name):
        candidate = v.qual.rsplit(".", 1)[0] + "." + leaf if "." in v.qual else leaf
        if CATALOGUE.lookup(candidate) is not None or candidate in KNOWN_EXTRA:
            func = v.node.func
            if isinstance(func, cst.Attribute):
                return site.code(func.with_changes(attr=cst.Name(leaf)))
            return site.spell(candidate)
    return site.spell(canonical)


def replace_call(outer: cst.Call, func: str, args: Sequence[cst.Arg]) -> cst.Call:
    """A call of `func` with `args`, laid out like `outer` (its parentheses, the whitespace
    inside its brackets, its trailing comma), so multi-line calls stay multi-line."""
    args = list(args)
    if args and outer.args:
        args[-1] = args[-1].with_changes(comma=outer.args[-1].comma)
    return outer.with_changes(func=expr(func), args=args)


def arg_list(values: Sequence[cst.BaseExpression | cst.Arg]) -> list[cst.Arg]:
    out: list[cst.Arg] = []
    for i, value in enumerate(values):
        arg = value if isinstance(value, cst.Arg) else cst.Arg(value=value)
        if i < len(values) - 1:
            arg = arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        else:
            arg = arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        out.append(arg)
    return out


def positional(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value)


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def with_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    """`call` with `name=value` set (replaced if present, else appended in the call's layout:
    one argument per line stays one argument per line)."""
    args = list(call.args)
    for i, a in enumerate(args):
        if a.keyword is not None and a.keyword.value == name:
            args[i] = a.with_changes(value=expr(value))
            return call.with_changes(args=args)
    new = keyword(name, expr(value))
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.MaybeSentinel):
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        else:  # a trailing comma: the new argument takes the layout of the ones before it
            between: cst.BaseParenthesizableWhitespace = call.whitespace_before_args
            if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
                between = args[-2].comma.whitespace_after
            new = new.with_changes(comma=last.comma)
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=between))
    return call.with_changes(args=[*args, new])


def replace_in(root: cst.CSTNode, old: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
    return root.deep_replace(old, new)


def operand_node(site: Site) -> cst.BaseExpression:
    """The operand inside the flagged node, found by its text (the finding names it)."""
    want = flat(site.request.operand)
    found: list[cst.BaseExpression] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if (
                isinstance(node, cst.BaseExpression)
                and node is not site.node
                and flat(site.code(node)) == want
            ):
                found.append(node)
                return False
            return True

    site.node.visit(Finder())
    if not found:
        raise Unsupported(f"operand `{site.request.operand}` not found in the call")
    v = view(site, found[0])
    if v is not None and v.spec is not None and v.spec.op == site.request.op:
        inner = v.operand()  # `exp(x) - 1` names exp(x) itself: the operand is x
        if inner is not None:
            return inner
    return found[0]


def substitute_operand(
    site: Site,
    new_text: Callable[[cst.BaseExpression], str],
    kind: FixKind,
    name: str,
    description: str,
    watch: tuple[str, ...] | None = None,
) -> Edit:
    """Replace the operand inside the flagged node. The new text is built from the operand
    without its own parentheses; they are put back around the result when it is not an atom,
    and added where the slot needs an atom (a method receiver, an operand of an operator)."""
    operand = operand_node(site)
    bare = operand.with_changes(lpar=[], rpar=[]) if operand.lpar else operand
    new_operand = expr(new_text(bare))
    if not isinstance(new_operand, ATOMS) and not new_operand.lpar:
        parent = site.parent(operand)
        if operand.lpar:
            new_operand = new_operand.with_changes(lpar=operand.lpar, rpar=operand.rpar)
        elif isinstance(
            parent, cst.Attribute | cst.BinaryOperation | cst.UnaryOperation | cst.Subscript
        ):
            new_operand = atomic(new_operand)
    new = replace_in(site.node, operand, new_operand)
    return Edit(
        kind,
        name,
        description,
        site.node,
        new,
        site.take_imports(),
        watch if watch is not None else (site.request.op,),
    )
