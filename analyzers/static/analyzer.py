"""Abstract interpretation of one function (or a module's top level) over libcst.

Statements run in order with an environment of abstract values; branches are joined;
guards refine variables; every call and operator the catalogue knows is checked against its
domain as the value reaching it is evaluated. The result is a list of raw findings still
holding their libcst nodes; positions are resolved only when there is something to report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from analyzers.catalogue import CATALOGUE, OpSpec
from analyzers.dtypes import limits, round_to
from analyzers.static import explain
from analyzers.static.conditions import Fact, facts_from, refine
from analyzers.static.prefilter import ClassFacts, ImportMap
from analyzers.static.values import (
    FULL,
    INF,
    NONNEG,
    POSITIVE,
    UNIT,
    UNKNOWN,
    Interval,
    Kind,
    Value,
    absolute,
    add,
    constant,
    div,
    fold_add,
    join,
    mul,
    neg,
    square,
    sub,
    tensor_kind,
)

TENSOR_ANNOTATION = re.compile(
    r"\b(Tensor|ndarray|Array|ArrayLike|Variable|Float\[|Int\[|Shaped\[|TensorType)")
SCALAR_ANNOTATION = re.compile(r"^(int|float|bool|str|complex)$")
MODEL_METHODS = ("forward", "call", "__call__", "training_step", "validation_step")
FRAMEWORK_ROOTS = ("torch", "tensorflow", "keras", "numpy", "jax", "scipy", "tf_keras")

# Tensor methods that hand back the same values (or a view of them).
SAME_VALUE_METHODS = frozenset({
    "detach", "float", "double", "half", "bfloat16", "to", "cuda", "cpu", "contiguous", "view",
    "view_as", "reshape", "reshape_as", "unsqueeze", "squeeze", "flatten", "permute",
    "transpose", "t", "expand", "expand_as", "repeat", "clone", "type_as", "type", "numpy",
    "squeeze_", "unsqueeze_", "requires_grad_", "movedim", "narrow", "chunk", "split",
    "gather", "index_select", "masked_select", "roll", "flip", "tile", "astype",
})
SAME_RANGE_REDUCTIONS = frozenset({"mean", "max", "min", "amax", "amin", "median", "nanmean",
                                   "reduce_mean", "reduce_max", "reduce_min", "nanmedian"})
SUM_REDUCTIONS = frozenset({"sum", "reduce_sum", "nansum", "cumsum"})
SCALAR_METHODS = frozenset({"item", "size", "dim", "numel", "tolist", "nelement", "ndimension",
                            "get_shape", "element_size"})
BOOL_METHODS = frozenset({"all", "any", "gt", "ge", "lt", "le", "eq", "ne", "isnan", "isinf",
                          "isfinite", "logical_and", "logical_or", "logical_not"})
CONST_LIKE = {"ones_like": 1.0, "zeros_like": 0.0, "ones": 1.0, "zeros": 0.0}
NEG_INF_NAMES = ("math.inf", "numpy.inf", "torch.inf", "jax.numpy.inf", "numpy.Inf")
TENSOR_FACTORIES = frozenset({"tensor", "as_tensor", "constant", "convert_to_tensor", "array",
                              "asarray", "scalar_tensor", "full", "full_like", "Variable"})
# log(producer(x)) with a stable API: the rule each producer triggers.
LOG_PATTERNS = {"softmax": "log-softmax", "sigmoid": "log-sigmoid",
                "one_minus_sigmoid": "log-sigmoid", "sum_exp": "log-sum-exp",
                "one_plus": "log1p"}


@dataclass
class RawFinding:
    node: cst.CSTNode
    stmt: cst.CSTNode
    op: str
    rule: str
    framework: str
    call: str
    operand: str
    why: str
    interval: Interval | None
    suggestion: str
    function: str


@dataclass
class FileContext:
    imports: ImportMap
    constants: dict[str, float]
    dtype: str
    half_precision: bool
    primary_framework: str
    enabled: frozenset[str] | None = None  # None: every op


@dataclass
class _Probe:
    """While evaluating a `where` branch without its guard: which nodes would be flagged."""

    nodes: list[tuple[cst.CSTNode, str, str]] = field(default_factory=list)


class FunctionAnalyzer:
    """Evaluates one unit. `module` is the parsed unit, used for source text of nodes."""

    def __init__(self, module: cst.Module, ctx: FileContext, cls: ClassFacts | None = None):
        self.module = module
        self.ctx = ctx
        self.cls = cls
        self.dtype = ctx.dtype
        self.env: dict[str, Value] = {}
        self.findings: list[RawFinding] = []
        self.stmt: cst.CSTNode = module
        self.function = "<module>"
        self.probe: _Probe | None = None
        self._seen: set[tuple[int, str, str]] = set()
        self._code_cache: dict[int, str] = {}

    # ---------------------------------------------------------------- entry points
    def run_module(self) -> list[RawFinding]:
        self.env = self._module_env()
        self._block(self.module.body)
        return self.findings

    def run_function(self, func: cst.FunctionDef, qualname: str) -> list[RawFinding]:
        self.env = self._module_env()
        self._function(func, qualname, self.cls)
        return self.findings

    def _module_env(self) -> dict[str, Value]:
        return {name: Value("scalar", constant(round_to(v, self.dtype)))
                for name, v in self.ctx.constants.items()}

    # ---------------------------------------------------------------- helpers
    def code(self, node: cst.CSTNode) -> str:
        key = id(node)
        if key not in self._code_cache:
            self._code_cache[key] = self.module.code_for_node(node).strip()
        return self._code_cache[key]

    def dotted(self, node: cst.BaseExpression) -> str | None:
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if isinstance(node, cst.Name):
            parts.append(node.value)
            return ".".join(reversed(parts))
        return None

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """A qualified name for an imported function; local names shadow imports."""
        dotted = self.dotted(node)
        if dotted is None:
            return None
        head = dotted.split(".", 1)[0]
        if head in self.env and self.env[head].kind != "module":
            return None
        return self.ctx.imports.resolve(dotted)

    def const(self, node: cst.BaseExpression) -> float | None:
        """A compile-time number, without evaluating side effects twice."""
        saved_probe, saved_findings, saved_seen = self.probe, self.findings, self._seen
        self.probe, self.findings, self._seen = _Probe(), [], set(saved_seen)
        try:
            value = self.ev(node)
        finally:
            self.probe, self.findings, self._seen = saved_probe, saved_findings, saved_seen
        iv = value.interval
        return iv.lo if iv.lo == iv.hi else None

    def _framework(self, qual: str | None) -> str:
        if qual:
            root = qual.split(".", 1)[0]
            if root in ("numpy", "jax", "math", "scipy"):
                return root
            if root in ("tensorflow", "keras", "tf_keras"):
                return "tensorflow"
            if root == "torch":
                return "torch"
        return self.ctx.primary_framework

    # ---------------------------------------------------------------- statements
    def _block(self, body: cst.BaseSuite | cst.Module | Sequence[cst.CSTNode]) -> bool:
        """Run statements in order; True when the block always leaves (return/raise)."""
        stmts: Sequence[cst.CSTNode]
        if isinstance(body, cst.IndentedBlock | cst.Module | cst.SimpleStatementSuite):
            stmts = body.body
        else:
            stmts = body  # type: ignore[assignment]
        return any(self._stmt(stmt) for stmt in stmts)

    def _stmt(self, stmt: cst.CSTNode) -> bool:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.stmt = stmt
                if self._small(small):
                    return True
            return False
        self.stmt = stmt
        if isinstance(stmt, cst.If):
            return self._if(stmt)
        if isinstance(stmt, cst.For | cst.While):
            self._loop(stmt)
            return False
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                self.ev(item.item)
            return self._block(stmt.body)
        if isinstance(stmt, cst.Try | cst.TryStar):
            self._block(stmt.body)
            for handler in stmt.handlers:
                self._block(handler.body)
            if stmt.orelse:
                self._block(stmt.orelse.body)
            if stmt.finalbody:
                self._block(stmt.finalbody.body)
            return False
        if isinstance(stmt, cst.FunctionDef):
            saved = dict(self.env), self.function
            self._function(stmt, f"{self.function}.{stmt.name.value}"
                           if self.function != "<module>" else stmt.name.value, None)
            self.env, self.function = saved
            return False
        if isinstance(stmt, cst.ClassDef):
            saved_env, saved_fn = dict(self.env), self.function
            for member in stmt.body.body:
                if isinstance(member, cst.FunctionDef):
                    self._function(member, f"{stmt.name.value}.{member.name.value}", None)
                    self.env = dict(saved_env)
            self.function = saved_fn
            return False
        self._children(stmt)
        return False

    def _small(self, small: cst.BaseSmallStatement) -> bool:
        if isinstance(small, cst.Assign):
            value = self.ev(small.value)
            for target in small.targets:
                self._assign(target.target, value, small.value)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self._assign(small.target, self.ev(small.value), small.value)
        elif isinstance(small, cst.AugAssign):
            left = self.ev(small.target)
            right = self.ev(small.value)
            symbol = {"DivideAssign": "/", "FloorDivideAssign": "//", "PowerAssign": "**",
                      "AddAssign": "+", "SubtractAssign": "-", "MultiplyAssign": "*"}.get(
                small.operator.__class__.__name__)
            result = self._binop(small, symbol, left, right, small.target, small.value) \
                if symbol else UNKNOWN
            self._assign(small.target, result, small.value)
        elif isinstance(small, cst.Expr):
            self.ev(small.value)
            self._discarded_guard(small.value)
        elif isinstance(small, cst.Return):
            if small.value is not None:
                self.ev(small.value)
            return True
        elif isinstance(small, cst.Raise):
            if small.exc is not None:
                self.ev(small.exc)
            return True
        elif isinstance(small, cst.Assert):
            self.ev(small.test)
            self._apply(facts_from(small.test, True, self.const))
        elif isinstance(small, cst.Continue | cst.Break):
            return True
        elif isinstance(small, cst.Del | cst.Global | cst.Nonlocal | cst.Import
                        | cst.ImportFrom | cst.Pass):
            return False
        else:
            self._children(small)
        return False

    def _assign(self, target: cst.BaseExpression, value: Value,
                source: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            self.env[name] = value.with_(name=name) if value.name is None else value
        elif isinstance(target, cst.Tuple | cst.List):
            kind: Kind = "tensor" if value.kind == "tensor" else "unknown"
            for element in target.elements:
                self._assign(element.value, Value(kind), source)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            name = target.value.value
            old = self.env.get(name, Value("tensor"))
            merged = join(old, value).with_(kind=old.kind, producer=old.producer,
                                            name=name)
            if value.interval.hi == -INF:
                merged = merged.with_(neg_inf_filled=True)
            self.env[name] = merged

    def _if(self, stmt: cst.If) -> bool:
        self.ev(stmt.test)
        before = dict(self.env)
        self._apply(facts_from(stmt.test, True, self.const))
        body_leaves = self._block(stmt.body)
        after_body = self.env
        self.env = dict(before)
        self._apply(facts_from(stmt.test, False, self.const))
        else_leaves = False
        if isinstance(stmt.orelse, cst.If):
            self.stmt = stmt.orelse
            else_leaves = self._if(stmt.orelse)
        elif isinstance(stmt.orelse, cst.Else):
            else_leaves = self._block(stmt.orelse.body)
        after_else = self.env
        if body_leaves and else_leaves:
            return True
        if body_leaves:
            self.env = after_else
        elif else_leaves:
            self.env = after_body
        else:
            self.env = self._join_envs(after_body, after_else)
        return False

    def _loop(self, stmt: cst.For | cst.While) -> None:
        if isinstance(stmt, cst.For):
            iterable = self.ev(stmt.iter)
            self._assign(stmt.target, Value("tensor" if iterable.is_tensor else "unknown"),
                         stmt.iter)
        else:
            self.ev(stmt.test)
        before = dict(self.env)
        self._block(stmt.body)
        self.env = self._join_envs(before, self.env)
        self._block(stmt.body)  # once more with what the first iteration may have changed
        self.env = self._join_envs(before, self.env)
        if stmt.orelse is not None:
            self._block(stmt.orelse.body)

    @staticmethod
    def _join_envs(a: dict[str, Value], b: dict[str, Value]) -> dict[str, Value]:
        out: dict[str, Value] = {}
        for name in a.keys() | b.keys():
            if name in a and name in b:
                out[name] = join(a[name], b[name])
            else:
                out[name] = (a.get(name) or b[name]).with_(interval=FULL, producer=None)
        return out

    def _apply(self, facts: list[Fact]) -> None:
        for fact in facts:
            value = self.env.get(fact.name)
            if value is None:
                continue
            iv = value.interval
            lo, hi, lo_open = refine(iv.lo, iv.hi, iv.lo_open, fact)
            refined = Interval(lo, hi, lo_open, iv.not_zero or fact.nonzero)
            self.env[fact.name] = value.with_(interval=refined, fp16_interval=None)

    def _function(self, func: cst.FunctionDef, qualname: str,
                  cls: ClassFacts | None) -> None:
        self.function = qualname
        model_method = cls is not None and cls.is_model and func.name.value in MODEL_METHODS
        params = func.params
        all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
        for param in all_params:
            name = param.name.value
            if name in ("self", "cls"):
                self.env[name] = Value("unknown", name=name)
                continue
            value = Value("unknown", name=name)
            if param.annotation is not None:
                text = self.code(param.annotation.annotation)
                if TENSOR_ANNOTATION.search(text):
                    value = Value("tensor", name=name)
                elif SCALAR_ANNOTATION.match(text):
                    value = Value("scalar", name=name)
            elif model_method:
                value = Value("tensor", name=name)
            if param.default is not None and value.kind != "tensor":
                value = self._from_default(param.default, value)
            self.env[name] = value
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self.env[star.name.value] = Value("unknown", name=star.name.value)
        self._block(func.body)

    def _from_default(self, default_node: cst.BaseExpression, value: Value) -> Value:
        """A caller may pass another value, but rarely one of the other sign: `eps=1e-6`
        stays positive, while `gamma=2.0` is not taken to be exactly 2."""
        default = self.ev(default_node)
        iv = default.interval
        if default.kind != "scalar" or iv.lo != iv.hi or math.isinf(iv.lo):
            return value
        if iv.lo > 0:
            return value.with_(kind="scalar", interval=POSITIVE)
        if iv.lo == 0:
            return value.with_(kind="scalar", interval=NONNEG)
        return value.with_(kind="scalar")

    def _children(self, node: cst.CSTNode) -> None:
        for child in node.children:
            if isinstance(child, cst.BaseExpression):
                self.ev(child)
            elif isinstance(child, cst.BaseSuite):
                self._block(child)
            elif isinstance(child, cst.BaseStatement):
                self._stmt(child)
            else:
                self._children(child)

    # ---------------------------------------------------------------- expressions
    def ev(self, node: cst.BaseExpression) -> Value:
        if isinstance(node, cst.Name):
            return self._name(node)
        if isinstance(node, cst.Integer | cst.Float):
            try:
                number = float(node.evaluated_value)
            except (ValueError, OverflowError):
                return Value("scalar")
            return Value("scalar", constant(round_to(number, self.dtype)))
        if isinstance(node, cst.UnaryOperation):
            inner = self.ev(node.expression)
            if isinstance(node.operator, cst.Minus):
                return inner.with_(interval=neg(inner.interval), producer=None, name=None)
            if isinstance(node.operator, cst.Not):
                return Value(inner.kind if inner.is_tensor else "scalar", UNIT)
            return inner
        if isinstance(node, cst.Attribute):
            return self._attribute(node)
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.BinaryOperation):
            left = self.ev(node.left)
            right = self.ev(node.right)
            symbol = {"Divide": "/", "FloorDivide": "//", "Power": "**", "Add": "+",
                      "Subtract": "-", "Multiply": "*", "MatrixMultiply": "@",
                      "Modulo": "%"}.get(node.operator.__class__.__name__)
            return self._binop(node, symbol, left, right, node.left, node.right)
        if isinstance(node, cst.Subscript):
            base = self.ev(node.value)
            for element in node.slice:
                self._children(element)
            if base.kind == "tensor":
                return base.with_(name=None) if base.name else base
            return Value(base.kind if base.kind != "module" else "unknown")
        if isinstance(node, cst.Comparison):
            values = [self.ev(node.left)] + [self.ev(t.comparator) for t in node.comparisons]
            return Value("tensor" if any(v.is_tensor for v in values) else "scalar", UNIT)
        if isinstance(node, cst.BooleanOperation):
            return join(self.ev(node.left), self.ev(node.right))
        if isinstance(node, cst.IfExp):
            self.ev(node.test)
            before = dict(self.env)
            self._apply(facts_from(node.test, True, self.const))
            body = self.ev(node.body)
            self.env = dict(before)
            self._apply(facts_from(node.test, False, self.const))
            orelse = self.ev(node.orelse)
            self.env = before
            return join(body, orelse)
        if isinstance(node, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString):
            self._children(node)
            return Value("scalar")
        if isinstance(node, cst.Lambda):
            return Value("callable")
        if isinstance(node, cst.ListComp | cst.GeneratorExp | cst.SetComp | cst.DictComp):
            saved = dict(self.env)
            self._comprehension(node)
            self.env = saved
            return Value("unknown")
        self._children(node)
        return Value("unknown")

    def _comprehension(self, node: cst.BaseExpression) -> None:
        comp: cst.CompFor | None = getattr(node, "for_in", None)
        while comp is not None:
            iterable = self.ev(comp.iter)
            self._assign(comp.target, Value("tensor" if iterable.is_tensor else "unknown"),
                         comp.iter)
            for cond in comp.ifs:
                self.ev(cond.test)
                self._apply(facts_from(cond.test, True, self.const))
            comp = comp.inner_for_in
        for attr in ("elt", "key", "value"):
            child = getattr(node, attr, None)
            if isinstance(child, cst.BaseExpression):
                self.ev(child)

    def _name(self, node: cst.Name) -> Value:
        name = node.value
        if name in self.env:
            return self.env[name]
        if name in ("True", "False"):
            return Value("scalar", UNIT)
        if name == "None":
            return Value("scalar")
        if name in self.ctx.imports.names:
            return Value("module")
        return Value("unknown", name=name)

    def _attribute(self, node: cst.Attribute) -> Value:
        qual = self.resolve(node)
        if qual is not None:
            if qual in NEG_INF_NAMES or qual.endswith(".inf") or qual.endswith(".Inf"):
                return Value("scalar", constant(INF))
            if qual in ("math.pi", "numpy.pi", "torch.pi"):
                return Value("scalar", constant(math.pi))
            if qual in ("math.e", "numpy.e"):
                return Value("scalar", constant(math.e))
            return Value("module")
        base = self.ev(node.value)
        attr = node.attr.value
        if base.kind == "module":
            return Value("module")
        if base.kind == "finfo":
            return self._finfo_attr(base, attr)
        if attr in ("shape", "ndim", "dtype", "device", "is_cuda", "requires_grad"):
            return Value("scalar")
        if attr in ("T", "mT", "H", "data", "real", "values"):
            return base.with_(name=None) if base.kind == "tensor" else base
        if attr in ("grad", "weight", "bias"):
            return Value("tensor")
        if base.name == "self" and self.cls is not None and attr in self.cls.attr_calls:
            return self._constructed(self.cls.attr_calls[attr])
        return Value("unknown")

    def _finfo_attr(self, base: Value, attr: str) -> Value:
        lim = limits(base.origin or self.dtype)
        table = {"eps": lim.eps, "tiny": lim.tiny, "smallest_normal": lim.tiny,
                 "max": lim.max, "min": -lim.max}
        if attr in table:
            return Value("scalar", constant(table[attr]))
        return Value("scalar")

    def _constructed(self, qual: str) -> Value:
        """`nn.BCELoss()` and friends: a value that behaves like the op when called."""
        found = CATALOGUE.lookup(qual)
        if found and found[0].kind == "risky" and qual.rsplit(".", 1)[-1][:1].isupper():
            return Value("callable", callable_op=found[0].op)
        return Value("callable")

    # ---------------------------------------------------------------- operators
    def _binop(self, node: cst.CSTNode, symbol: str | None, left: Value, right: Value,
               left_node: cst.BaseExpression, right_node: cst.BaseExpression) -> Value:
        kind = tensor_kind(left, right)
        dtype = self.dtype
        if symbol in ("/", "//"):
            if right.is_tensor:
                self._check_division(node, right, right_node)
            return Value(kind, div(left.interval, right.interval, dtype),
                         neg_inf_filled=left.neg_inf_filled)
        if symbol == "**":
            exponent = right.interval.lo if right.interval.lo == right.interval.hi else None
            if left.is_tensor:
                self._check_pow(node, left, left_node, exponent)
            if exponent == 2:
                return Value(kind, square(left.interval), producer="square")
            if exponent is not None and exponent > 0 and left.interval.nonnegative():
                return Value(kind, Interval(0.0, INF, left.interval.positive()))
            return Value(kind)
        if symbol == "+":
            return self._add(node, left, right, left_node, right_node, kind)
        if symbol == "-":
            result = Value(kind, sub(left.interval, right.interval, dtype),
                           neg_inf_filled=left.neg_inf_filled)
            if right.max_of is not None and left.name == right.max_of:
                result = result.with_(interval=Interval(-INF, 0.0))  # x - max(x) <= 0
            if left.interval == constant(1.0) and right.producer == "sigmoid":
                result = result.with_(producer="one_minus_sigmoid", name=right.name)
            if left.producer == "exp" and right.interval == constant(1.0) and left.is_tensor:
                self._emit_pattern(node, CATALOGUE.by_op["exp"], "expm1", left_node, left,
                                   self._framework(None), absorb=("exp",))
            if left.absorbed_eps or right.absorbed_eps:
                result = result.with_(absorbed_eps=left.absorbed_eps or right.absorbed_eps)
            if left.interval.lo == left.interval.hi and right.producer is not None \
                    and result.producer is None:
                result = result.with_(producer=right.producer if right.producer in (
                    "softmax", "sigmoid") else None, name=right.name)
            return result
        if symbol == "*":
            same = isinstance(left_node, cst.Name) and isinstance(right_node, cst.Name) \
                and left_node.value == right_node.value
            if same:
                return Value(kind, square(left.interval), producer="square")
            return Value(kind, mul(left.interval, right.interval, dtype),
                         neg_inf_filled=left.neg_inf_filled or right.neg_inf_filled)
        return Value(kind)

    def _add(self, node: cst.CSTNode, left: Value, right: Value,
             left_node: cst.BaseExpression, right_node: cst.BaseExpression,
             kind: str) -> Value:
        dtype = self.dtype
        a, b = left.interval, right.interval
        absorbed = left.absorbed_eps or right.absorbed_eps
        if a.lo == a.hi and b.lo == b.hi and not math.isinf(a.lo) and not math.isinf(b.lo):
            total, note = fold_add(a.lo, b.lo, dtype)
            return Value("scalar" if kind == "scalar" else kind,  # type: ignore[arg-type]
                         constant(total), absorbed_eps=note or absorbed)
        result = Value(kind, add(a, b, dtype), absorbed_eps=absorbed)  # type: ignore[arg-type]
        for value, other in ((left, right), (right, left)):
            iv = other.interval
            if iv.lo == iv.hi == 1.0 and value.is_tensor and result.producer is None:
                result = result.with_(producer="one_plus")
        eps_value = next((v.interval.lo for v in (left, right)
                          if v.interval.lo == v.interval.hi and 0 < v.interval.lo < 1e-3), None)
        other = right if eps_value is not None and left.interval.lo == eps_value else left
        if eps_value is not None:
            if round_to(eps_value, "float16") == 0.0:
                result = result.with_(fp16_zero_eps=eps_value, fp16_interval=other.interval)
            if other.producer in ("norm", "std", "sumsq"):
                result = result.with_(producer=None)
            if result.producer == "one_plus":
                result = result.with_(producer=None)
        elif left.fp16_zero_eps or right.fp16_zero_eps:
            carrier = left if left.fp16_zero_eps else right
            rest = right if carrier is left else left
            if carrier.fp16_interval is not None:
                result = result.with_(fp16_zero_eps=carrier.fp16_zero_eps,
                                      fp16_interval=add(carrier.fp16_interval, rest.interval,
                                                        dtype))
        if left.producer == "square" and right.producer == "square":
            result = result.with_(producer="square")
        return result

    # ---------------------------------------------------------------- calls
    def _call(self, node: cst.Call) -> Value:
        func = node.func
        qual = self.resolve(func)
        if qual is not None:
            return self._framework_call(node, qual)
        if isinstance(func, cst.Attribute):
            receiver = self.ev(func.value)
            if receiver.kind != "module":
                return self._method_call(node, func, receiver)
            self._eval_args(node)
            return Value("tensor")
        if isinstance(func, cst.Name):
            return self._plain_call(node, func.value)
        callee = self.ev(func)
        args = self._eval_args(node)
        if callee.callable_op:
            return self._call_op_object(node, callee.callable_op, args)
        return Value("unknown")

    def _eval_args(self, node: cst.Call) -> list[tuple[str | None, Value]]:
        return [(a.keyword.value if a.keyword else None, self.ev(a.value)) for a in node.args]

    @staticmethod
    def _arg(node: cst.Call, index: int, keywords: tuple[str, ...] = ()) -> \
            cst.BaseExpression | None:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        for a in node.args:
            if a.keyword is not None and a.keyword.value in keywords:
                return a.value
        return positional[index].value if index < len(positional) else None

    def _plain_call(self, node: cst.Call, name: str) -> Value:
        args = self._eval_args(node)
        if name in self.env and self.env[name].callable_op:
            return self._call_op_object(node, self.env[name].callable_op or "", args)
        if name == "float" and len(node.args) == 1:
            arg = node.args[0].value
            if isinstance(arg, cst.SimpleString):
                text = arg.evaluated_value
                if isinstance(text, str):
                    try:
                        return Value("scalar", constant(float(text)))
                    except ValueError:
                        return Value("scalar")
            return args[0][1].with_(kind="scalar") if args else Value("scalar")
        if name in ("len", "int", "round", "bool", "str"):
            return Value("scalar")
        if name == "abs" and args:
            return args[0][1].with_(interval=absolute(args[0][1].interval), producer="abs",
                                    name=None)
        if name in ("max", "min") and len(args) >= 2:
            ivs = [v.interval for _, v in args]
            if name == "max":
                lo = max(iv.lo for iv in ivs)
                return Value(tensor_kind(*(v for _, v in args)),
                             Interval(lo, max(iv.hi for iv in ivs)))
            return Value(tensor_kind(*(v for _, v in args)),
                         Interval(min(iv.lo for iv in ivs), min(iv.hi for iv in ivs)))
        return Value("unknown")

    def _call_op_object(self, node: cst.Call, op: str,
                        args: list[tuple[str | None, Value]]) -> Value:
        spec = CATALOGUE.by_op[op]
        if op == "binary_cross_entropy":
            operand = self._arg(node, 0, ("input",))
            if operand is not None:
                value = self.ev_cached(operand, args, node)
                if value.producer == "sigmoid":
                    self._emit_pattern(node, spec, "bce-sigmoid", operand, value,
                                       self.ctx.primary_framework)
        return Value("tensor")

    def ev_cached(self, operand: cst.BaseExpression, args: list[tuple[str | None, Value]],
                  node: cst.Call) -> Value:
        for arg, (_, value) in zip(node.args, args, strict=False):
            if arg.value is operand:
                return value
        return UNKNOWN

    def _framework_call(self, node: cst.Call, qual: str) -> Value:
        leaf = qual.rsplit(".", 1)[-1]
        framework = self._framework(qual)
        found = CATALOGUE.lookup(qual)
        if found is not None and found[0].op == "where" and len(node.args) == 3:
            return self._where(node, framework)
        args = self._eval_args(node)
        values = [v for _, v in args]
        if found is None:
            return self._helper_call(node, qual, leaf, args, framework)
        spec, framework = found
        if leaf[:1].isupper():  # a loss class: calling the instance is the op
            if spec.op == "binary_cross_entropy" and not self._from_logits(node):
                return Value("callable", callable_op=spec.op)
            return Value("callable")
        return self._apply_spec(node, spec, qual, framework, args, values, receiver=None)

    def _from_logits(self, node: cst.Call) -> bool:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "from_logits":
                return self.code(arg.value) != "False"
        return False

    def _helper_call(self, node: cst.Call, qual: str, leaf: str,
                     args: list[tuple[str | None, Value]], framework: str) -> Value:
        values = [v for _, v in args]
        root = qual.split(".", 1)[0]
        if leaf == "finfo":
            dtype_text = self.code(node.args[0].value) if node.args else self.dtype
            dtype = next((d for d in ("float16", "bfloat16", "float64", "float32")
                          if d in dtype_text), None)
            if dtype is None and ("half" in dtype_text):
                dtype = "float16"
            return Value("finfo", origin=dtype or self.dtype)
        if leaf == "epsilon" and root in ("keras", "tensorflow"):
            return Value("scalar", constant(round_to(1e-7, self.dtype)))
        if leaf in CONST_LIKE:
            return Value("tensor", constant(CONST_LIKE[leaf]))
        if leaf in ("full_like", "full") and len(values) >= 2:
            return Value("tensor", values[1].interval)
        if leaf in TENSOR_FACTORIES and values:
            return values[0].with_(kind="tensor", name=None)
        if leaf in SUM_REDUCTIONS and values:
            return self._sum(values[0])
        if leaf in SAME_RANGE_REDUCTIONS and values:
            keep = values[0].producer if values[0].producer in ("exp", "softmax", "sigmoid") \
                else None
            max_of = values[0].name if leaf in ("max", "amax", "reduce_max") else None
            return values[0].with_(kind="tensor", name=None, producer=keep, max_of=max_of)
        if leaf in ("masked_fill",) and len(values) >= 3:
            return self._masked_fill(values[0], values[2])
        if leaf == "sign":
            return Value("tensor", Interval(-1.0, 1.0))
        if root == "math":
            return Value("scalar")
        if root in FRAMEWORK_ROOTS:
            return Value("tensor")
        return Value("unknown")

    def _sum(self, value: Value) -> Value:
        producer = {"exp": "sum_exp", "square": "sumsq"}.get(value.producer or "")
        if value.interval.nonnegative():
            return Value("tensor", NONNEG if not value.interval.positive() else POSITIVE,
                         producer=producer)
        return Value("tensor", producer=producer)

    def _masked_fill(self, base: Value, fill: Value) -> Value:
        merged = join(base, fill).with_(kind="tensor", producer=None, name=None)
        if fill.interval.hi == -INF:
            merged = merged.with_(neg_inf_filled=True)
        return merged

    def _method_call(self, node: cst.Call, func: cst.Attribute, receiver: Value) -> Value:
        method = func.attr.value
        args = self._eval_args(node)
        values = [v for _, v in args]
        positional = [a for a in node.args if a.keyword is None]
        if receiver.callable_op and method in ("__call__", "forward"):
            return self._call_op_object(node, receiver.callable_op, args)
        if isinstance(func.value, cst.Name) and func.value.value == "self" \
                and self.cls is not None and method in self.cls.attr_calls:
            made = self._constructed(self.cls.attr_calls[method])
            if made.callable_op:
                return self._call_op_object(node, made.callable_op, args)
            return Value("tensor" if made.kind == "callable" else "unknown")
        if receiver.kind == "scalar" and method not in ("sqrt", "log", "exp"):
            return Value("scalar")
        spec = CATALOGUE.method(method)
        tensorish = receiver.kind in ("tensor", "unknown") and receiver.name not in ("self",)
        if spec is not None and tensorish and self._tensor_signature(spec, method, positional,
                                                                      node):
            return self._apply_spec(node, spec, None, self._framework(None), args, values,
                                    receiver=(func.value, receiver))
        if method in ("clamp_", "clamp_min_", "clamp_max_", "clip_", "masked_fill_",
                      "relu_", "abs_"):
            return self._in_place(node, func, method, receiver, args)
        if method == "masked_fill" and len(values) >= 2:
            return self._masked_fill(receiver, values[1])
        if method in SAME_VALUE_METHODS:
            if receiver.kind == "tensor" or method in ("detach", "float", "contiguous"):
                return receiver.with_(kind="tensor", name=receiver.name)
            return receiver if receiver.kind == "tensor" else Value("unknown")
        if method in SCALAR_METHODS:
            return receiver.with_(kind="scalar") if method == "item" else Value("scalar")
        if method in SUM_REDUCTIONS:
            return self._sum(receiver)
        if method in SAME_RANGE_REDUCTIONS:
            keep = receiver.producer if receiver.producer in ("exp", "softmax", "sigmoid") \
                else None
            max_of = receiver.name if method in ("max", "amax") else None
            return receiver.with_(kind="tensor", name=None, producer=keep, max_of=max_of)
        if method in BOOL_METHODS:
            return Value("tensor" if receiver.kind != "scalar" else "scalar", UNIT)
        if method == "pow":
            return Value("tensor")
        if receiver.kind == "tensor":
            return Value("tensor")
        return Value("unknown")

    @staticmethod
    def _tensor_signature(spec: OpSpec, method: str, positional: list[cst.Arg],
                          node: cst.Call) -> bool:
        """Rule out `logger.log("msg", v)`: tensor methods take no (or one) positional."""
        if spec.kind == "guard" or spec.op in ("softmax", "norm", "std", "logit"):
            return True
        if spec.op in ("pow", "div", "fmod", "atan2"):
            return len(positional) == 1
        if spec.op == "digamma" and method in ("polygamma", "mvlgamma"):
            return len(positional) <= 1
        return not positional and all(a.keyword is None or a.keyword.value in ("out",)
                                      for a in node.args)

    def _in_place(self, node: cst.Call, func: cst.Attribute, method: str, receiver: Value,
                  args: list[tuple[str | None, Value]]) -> Value:
        base = method.rstrip("_")
        if base == "masked_fill" and len(args) >= 2:
            updated = self._masked_fill(receiver, args[1][1])
        elif base in ("relu", "abs"):
            updated = receiver.with_(interval=absolute(receiver.interval)
                                     if base == "abs" else receiver.interval.meet_lo(0.0))
        else:
            updated = receiver.with_(interval=self._clamped(receiver.interval, base, node,
                                                            args))
        if isinstance(func.value, cst.Name):
            self.env[func.value.value] = updated.with_(name=func.value.value)
        return updated

    def _clamped(self, iv: Interval, base: str, node: cst.Call,
                 args: list[tuple[str | None, Value]]) -> Interval:
        """Bounds from clamp/clip arguments: `clamp(min=a, max=b)`, `clamp_min(a)`, ..."""
        positional = [v for k, v in args if k is None]
        keywords = {k: v for k, v in args if k is not None}
        lo_val = keywords.get("min", keywords.get("clip_value_min", keywords.get("a_min")))
        hi_val = keywords.get("max", keywords.get("clip_value_max", keywords.get("a_max")))
        if base == "clamp_min":
            lo_val = lo_val or (positional[0] if positional else None)
        elif base == "clamp_max":
            hi_val = hi_val or (positional[0] if positional else None)
        else:
            if lo_val is None and len(positional) >= 1:
                lo_val = positional[0]
            if hi_val is None and len(positional) >= 2:
                hi_val = positional[1]
        if lo_val is not None and lo_val.interval.lo != -INF:
            iv = iv.meet_lo(lo_val.interval.lo, lo_val.interval.lo_open)
        if hi_val is not None and hi_val.interval.hi != INF:
            iv = iv.meet_hi(hi_val.interval.hi)
        return iv

    def _where(self, node: cst.Call, framework: str) -> Value:
        cond, when_true, when_false = (a.value for a in node.args[:3])
        self.ev(cond)
        before = dict(self.env)
        grad_leak = framework in ("torch", "tensorflow", "jax")
        leaked: list[tuple[cst.CSTNode, str, str]] = []
        if grad_leak:
            probe = _Probe()
            saved_probe, self.probe = self.probe, probe
            self.ev(when_true)
            self.probe = saved_probe
            leaked = probe.nodes
        self._apply(facts_from(cond, True, self.const))
        guarded = _Probe()
        saved_probe, self.probe = self.probe, guarded
        true_value = self.ev(when_true)
        self.probe = saved_probe
        flagged_anyway = {id(n) for n, _, _ in guarded.nodes}
        self.env = dict(before)
        self._apply(facts_from(cond, False, self.const))
        false_value = self.ev(when_false)
        self.env = before
        if self.probe is None:
            true_value = self._replay(when_true, before, cond)
        for leak_node, op, operand_src in leaked:
            if id(leak_node) in flagged_anyway:
                continue
            spec = CATALOGUE.by_op[op]
            self._record(leak_node, spec, "where-grad-leak", framework, operand_src,
                         f"`torch.where` hides the forward value of `{self.code(leak_node)}` "
                         f"where the condition is false, but the gradient still flows "
                         f"through it there and is NaN/inf, and 0 * NaN = NaN.",
                         None)
        joined = join(true_value, false_value).with_(kind="tensor", name=None)
        return joined if joined.producer else joined.with_(producer="where")

    def _replay(self, branch: cst.BaseExpression, before: dict[str, Value],
                cond: cst.BaseExpression) -> Value:
        """Evaluate the guarded branch for real, so nodes inside it are reported normally."""
        self._apply(facts_from(cond, True, self.const))
        value = self.ev(branch)
        self.env = dict(before)
        return value

    # ---------------------------------------------------------------- the checks
    def _apply_spec(self, node: cst.Call, spec: OpSpec, qual: str | None, framework: str,
                    args: list[tuple[str | None, Value]], values: list[Value],
                    receiver: tuple[cst.BaseExpression, Value] | None) -> Value:
        if spec.kind == "guard":
            return self._guard_value(node, spec, qual, args, values, receiver)
        operand_node, operand = self._operand(node, spec, qual, args, receiver)
        if spec.kind == "producer":
            return self._produce(spec, operand, values, receiver)
        if framework == "math" and not (operand.is_tensor or not operand.interval.unknown):
            return Value("scalar")
        if spec.op == "softmax":
            if operand.neg_inf_filled and operand_node is not None:
                self._emit_pattern(node, spec, "masked-softmax-inf", operand_node, operand,
                                   framework)
            return Value("tensor", UNIT, producer="softmax")
        if spec.op == "binary_cross_entropy":
            if operand_node is not None and operand.producer == "sigmoid" \
                    and not self._from_logits(node):
                self._emit_pattern(node, spec, "bce-sigmoid", operand_node, operand, framework)
            return Value("tensor")
        if operand_node is None:
            return Value("tensor")
        if spec.op == "log" and not operand.absorbed_eps and operand.producer in LOG_PATTERNS:
            rule = LOG_PATTERNS[operand.producer or ""]
            self._emit_pattern(node, spec, rule, operand_node, operand, framework,
                               absorb=("exp",) if rule == "log-sum-exp" else ())
            return Value("tensor")
        if spec.op == "pow":
            exponent_node = self._arg(node, 0 if receiver else 1, ("exponent", "y"))
            exponent = self.const(exponent_node) if exponent_node is not None else None
            self._check_pow(node, operand, operand_node, exponent, framework)
            if exponent == 2:
                return Value("tensor", square(operand.interval), producer="square")
            return Value("tensor")
        if spec.op == "atan2":
            other_node = self._arg(node, 1 if not receiver else 0, ("other", "x"))
            other = self.ev_cached(other_node, args, node) if other_node is not None else UNKNOWN
            guarded = "where" in (operand.producer, other.producer)
            if not guarded and not operand.interval.nonzero() and not other.interval.nonzero():
                self._record(node, spec, "unguarded-domain", framework, self.code(operand_node),
                             "both arguments of atan2 can be 0 at once, where its gradient is "
                             "NaN (pytorch#98276).", None)
            return Value("tensor", Interval(-math.pi, math.pi))
        if spec.op == "div":
            self._check_division(node, operand, operand_node, framework)
            numerator = values[0] if receiver is None and values else (
                receiver[1] if receiver else UNKNOWN)
            return Value("tensor", div(numerator.interval, operand.interval, self.dtype))
        self._check_domain(node, spec, operand_node, operand, framework)
        result = self._result_of(spec, operand)
        return result.with_(kind="scalar") if framework == "math" else result

    def _operand(self, node: cst.Call, spec: OpSpec, qual: str | None,
                 args: list[tuple[str | None, Value]],
                 receiver: tuple[cst.BaseExpression, Value] | None) -> \
            tuple[cst.BaseExpression | None, Value]:
        if receiver is not None:
            if spec.op in ("div", "fmod"):
                arg = self._arg(node, 0, spec.operand_keywords)
                return arg, self.ev_cached(arg, args, node) if arg is not None else UNKNOWN
            return receiver
        index = spec.operand_index(qual or "")
        arg = self._arg(node, index, spec.operand_keywords)
        if arg is None:
            return None, UNKNOWN
        return arg, self.ev_cached(arg, args, node)

    def _produce(self, spec: OpSpec, operand: Value, values: list[Value],
                 receiver: tuple[cst.BaseExpression, Value] | None) -> Value:
        op = spec.op
        if op == "abs":
            return Value("tensor", absolute(operand.interval), producer="abs")
        if op == "square":
            return Value("tensor", square(operand.interval), producer="square")
        if op == "relu":
            return Value("tensor", operand.interval.meet_lo(0.0) if not
                         operand.interval.unknown else NONNEG, producer="relu")
        if op == "norm":
            return Value("tensor", NONNEG, producer="norm")
        if op == "std":
            return Value("tensor", NONNEG, producer="std")
        if op == "softplus":
            return Value("tensor", POSITIVE, producer="softplus")
        if spec.output is not None:
            lo, hi = spec.output
            return Value("tensor", Interval(lo, hi, spec.output_open_low), producer=op)
        return Value("tensor")

    def _result_of(self, spec: OpSpec, operand: Value) -> Value:
        """The op's output range, pushed through where the op is monotonic."""
        iv = operand.interval
        if spec.op == "exp":
            lo = round_to(math.exp(max(iv.lo, -745.0)), self.dtype) if iv.lo != -INF else 0.0
            hi = round_to(math.exp(min(iv.hi, 709.0)), self.dtype) if iv.hi != INF else INF
            return Value("tensor", Interval(lo, hi, lo == 0.0), producer="exp")
        if spec.op == "sqrt" and iv.nonnegative():
            producer = "norm" if operand.producer == "sumsq" else None
            hi = math.sqrt(iv.hi) if iv.hi != INF else INF
            return Value("tensor", Interval(math.sqrt(iv.lo), hi, iv.positive()),
                         producer=producer)
        if spec.op == "log" and iv.lo > 0:
            hi = math.log(iv.hi) if iv.hi != INF else INF
            return Value("tensor", Interval(math.log(iv.lo), hi))
        if spec.output is not None:
            lo, hi = spec.output
            return Value("tensor", Interval(lo, hi, spec.output_open_low))
        return Value("tensor")

    def _guard_value(self, node: cst.Call, spec: OpSpec, qual: str | None,
                     args: list[tuple[str | None, Value]], values: list[Value],
                     receiver: tuple[cst.BaseExpression, Value] | None) -> Value:
        base = receiver[1] if receiver is not None else (values[0] if values else UNKNOWN)
        rest = args if receiver is not None else args[1:]
        leaf = (qual or "").rsplit(".", 1)[-1] if qual else self.code(node.func).rsplit(".")[-1]
        if spec.op == "clamp":
            name = leaf if leaf in ("clamp_min", "clamp_max") else "clamp"
            iv = self._clamped(base.interval, name, node, rest)
            return base.with_(kind="tensor", interval=iv, producer=None, name=None,
                              neg_inf_filled=False)
        if spec.op in ("maximum", "minimum") and rest:
            other = rest[0][1].interval
            iv = base.interval
            if spec.op == "maximum" and other.lo != -INF:
                iv = iv.meet_lo(other.lo, other.lo_open)
            elif spec.op == "minimum" and other.hi != INF:
                iv = iv.meet_hi(other.hi)
            return Value("tensor", iv)
        return Value("tensor")

    def _requirement_holds(self, requirement: str, iv: Interval, spec: OpSpec,
                           dtype: str) -> bool:
        if requirement == "positive":
            return iv.positive()
        if requirement == "nonzero":
            return iv.nonzero()
        if requirement == "gt_minus_one":
            return iv.lo > -1
        if requirement == "open_unit":
            return iv.lo > -1 and iv.hi < 1
        if requirement == "ge_one":
            return iv.lo >= 1
        if requirement == "below_exp_max":
            return iv.hi <= spec.thresholds.get(dtype, limits(dtype).exp_max)
        return True

    def _check_domain(self, node: cst.CSTNode, spec: OpSpec, operand_node: cst.BaseExpression,
                      operand: Value, framework: str, requirement: str | None = None) -> None:
        requirement = requirement or spec.requires
        if requirement == "none":
            return
        iv = operand.interval
        if self._requirement_holds(requirement, iv, spec, self.dtype):
            if self.ctx.half_precision and operand.fp16_zero_eps is not None \
                    and operand.fp16_interval is not None \
                    and not self._requirement_holds(requirement, operand.fp16_interval, spec,
                                                    "float16"):
                eps = operand.fp16_zero_eps
                self._record(node, spec, "eps-underflow-fp16", framework,
                             self.code(operand_node),
                             f"the epsilon {eps:g} in `{self.code(operand_node)}` is 0.0 in "
                             f"float16 (the smallest float16 is 6e-08), so under half "
                             f"precision the guard does nothing and "
                             f"{explain.consequence(spec, operand.fp16_interval, 'float16', requirement)}.",  # noqa: E501
                             operand.fp16_interval,
                             explain.pattern_hint("eps-underflow-fp16", framework))
            return
        operand_src = self.code(operand_node)
        consequence = explain.consequence(spec, iv, self.dtype, requirement)
        if operand.absorbed_eps:
            self._record(node, spec, "eps-absorbed", framework, operand_src,
                         f"the epsilon in `{operand_src}` is absorbed ({operand.absorbed_eps}), "
                         f"so it guards nothing and {consequence}.", iv,
                         explain.pattern_hint("eps-absorbed", framework))
            return
        if operand.fp16_zero_eps is not None and self.dtype == "float16":
            self._record(node, spec, "eps-underflow-fp16", framework, operand_src,
                         f"the epsilon {operand.fp16_zero_eps:g} is 0.0 in float16, so "
                         f"{consequence}.", iv, explain.pattern_hint("eps-underflow-fp16",
                                                                     framework))
            return
        self._record(node, spec, "unguarded-domain", framework, operand_src,
                     explain.why(operand_src, operand, consequence, self.dtype), iv,
                     explain.domain_hint(spec, operand_src, framework, requirement, iv,
                                         self.dtype))

    def _check_division(self, node: cst.CSTNode, divisor: Value,
                        divisor_node: cst.BaseExpression, framework: str | None = None) -> None:
        spec = CATALOGUE.by_op["div"]
        framework = framework or self._framework(None)
        if divisor.producer == "norm" and not divisor.interval.nonzero():
            self._emit_pattern(node, spec, "manual-normalize", divisor_node, divisor, framework,
                               absorb=("sqrt",))
            return
        self._check_domain(node, spec, divisor_node, divisor, framework)

    def _check_pow(self, node: cst.CSTNode, base: Value, base_node: cst.BaseExpression,
                   exponent: float | None, framework: str | None = None) -> None:
        spec = CATALOGUE.by_op["pow"]
        framework = framework or self._framework(None)
        if exponent is not None and exponent >= 0 and exponent == int(exponent):
            return
        requirement = "nonzero" if exponent is not None and exponent == int(exponent) \
            else "positive"
        self._check_domain(node, spec, base_node, base, framework, requirement)

    def _discarded_guard(self, expr: cst.BaseExpression) -> None:
        """`torch.clamp(x, min=eps)` as a statement: the guard's result is thrown away."""
        if not isinstance(expr, cst.Call):
            return
        qual = self.resolve(expr.func)
        spec: OpSpec | None = None
        target: cst.BaseExpression | None = None
        if qual is not None:
            found = CATALOGUE.lookup(qual)
            if found is not None:
                spec = found[0]
            target = self._arg(expr, 0, ("input", "x", "t", "a"))
        elif isinstance(expr.func, cst.Attribute):
            spec = CATALOGUE.method(expr.func.attr.value)
            target = expr.func.value
            receiver = self.ev_quiet(target)
            if receiver.kind in ("module", "scalar"):
                return
        if spec is None or spec.kind != "guard" or spec.op == "where" or target is None:
            return
        framework = self._framework(qual)
        self._record(expr, spec, "discarded-guard", framework, self.code(target),
                     f"the result of `{self.code(expr)}` is discarded, so `{self.code(target)}` "
                     f"is not guarded afterwards (clamp and clip return a new tensor).", None,
                     explain.pattern_hint("discarded-guard", framework))

    def ev_quiet(self, node: cst.BaseExpression) -> Value:
        saved_probe, saved_findings = self.probe, self.findings
        self.probe, self.findings = _Probe(), []
        try:
            return self.ev(node)
        finally:
            self.probe, self.findings = saved_probe, saved_findings

    # ---------------------------------------------------------------- recording
    def _emit_pattern(self, node: cst.CSTNode, spec: OpSpec, rule: str,
                      operand_node: cst.BaseExpression, operand: Value, framework: str,
                      absorb: tuple[str, ...] = ()) -> None:
        operand_src = self.code(operand_node)
        sentences = {
            "log-softmax": "log of a softmax is -inf as soon as one probability underflows "
                           f"to 0.0 (logits ~{limits(self.dtype).softmax_zero_gap:g} apart in "
                           f"{self.dtype})",
            "log-sigmoid": f"log of a sigmoid is -inf once the sigmoid saturates to 0.0 or "
                           f"1.0 in {self.dtype}",
            "bce-sigmoid": "binary cross-entropy on a sigmoid output takes log(0) once the "
                           "sigmoid saturates; the loss is clamped and the gradient is lost",
            "log-sum-exp": f"exp overflows to inf above {limits(self.dtype).exp_max:.2f} in "
                           f"{self.dtype}, so log(sum(exp(x))) is inf where logsumexp is finite",
            "log1p": "log(1 + x) loses all precision for |x| below machine epsilon "
                     f"({limits(self.dtype).eps:.2g} in {self.dtype}) and is NaN for x < -1",
            "expm1": "exp(x) - 1 cancels catastrophically for small x and overflows like exp",
            "masked-softmax-inf": "the scores are filled with -inf before softmax, so a row "
                                  "that is entirely masked gives 0/0 = NaN",
            "manual-normalize": "dividing by a norm is inf/NaN for an all-zero vector, "
                                "and so is the gradient",
        }
        subject = f"`{explain._short(operand_src)}`"
        if operand.name and operand.name != operand_src and rule in (
                "log-softmax", "log-sigmoid", "bce-sigmoid", "masked-softmax-inf"):
            subject += f" (from `{operand.name}`)"
        why = f"{subject}: {sentences.get(rule, rule)}."
        if absorb:
            self._absorb(operand_node if rule != "expm1" else node, absorb)
        self._record(node, spec, rule, framework, operand_src, why,
                     operand.interval if not operand.interval.unknown else None,
                     explain.pattern_hint(rule, framework))

    def _absorb(self, subtree: cst.CSTNode, ops: tuple[str, ...]) -> None:
        inside: set[int] = set()
        stack = [subtree]
        while stack:
            current = stack.pop()
            inside.add(id(current))
            stack.extend(current.children)
        self.findings = [f for f in self.findings
                         if not (id(f.node) in inside and f.op in ops)]

    def _record(self, node: cst.CSTNode, spec: OpSpec, rule: str, framework: str,
                operand_src: str, why: str, interval: Interval | None,
                suggestion: str = "") -> None:
        if self.ctx.enabled is not None and spec.op not in self.ctx.enabled:
            return
        if self.probe is not None:
            self.probe.nodes.append((node, spec.op, operand_src))
            return
        key = (id(node), spec.op, rule)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(RawFinding(
            node=node, stmt=self.stmt, op=spec.op, rule=rule, framework=framework,
            call=self.code(node), operand=operand_src, why=why, interval=interval,
            suggestion=suggestion, function=self.function,
        ))
