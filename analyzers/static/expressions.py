"""Expressions to abstract values: names, constants, attributes and operators.

A mixin of FunctionAnalyzer (analyzer.py), which holds the state these methods share; what
it calls in the other mixins is declared in interface.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import libcst as cst

from analyzers.catalogue import CATALOGUE
from analyzers.dtypes import limits, round_to
from analyzers.static import zeros
from analyzers.static.conditions import facts_from
from analyzers.static.interface import AnalyzerInterface
from analyzers.static.rules import RuleId
from analyzers.static.values import (
    COUNT,
    INF,
    SIZE,
    UNIT,
    Interval,
    Value,
    add,
    constant,
    div,
    fold_add,
    grad_free,
    join,
    mul,
    neg,
    promoted,
    restore_literal,
    square,
    sub,
    tensor_kind,
)
from analyzers.static.vocabulary import (
    NEG_INF_NAMES,
    UPCASTS,
)


class ExpressionsMixin(AnalyzerInterface):
    def ev(self, node: cst.BaseExpression) -> Value:
        if isinstance(node, cst.Name):
            return self._name(node)
        if isinstance(node, cst.Integer | cst.Float):
            try:
                number = float(node.evaluated_value)
            except (ValueError, OverflowError):
                return Value("scalar")
            stored = round_to(number, self.dtype)
            if stored == 0.0 and number != 0.0:  # `1e-8` in float16: the literal vanishes
                return Value(
                    "scalar", constant(0.0), fp16_zero_eps=number, fp16_interval=constant(0.0)
                )
            return Value("scalar", constant(stored))
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
            symbol = {
                "Divide": "/",
                "FloorDivide": "//",
                "Power": "**",
                "Add": "+",
                "Subtract": "-",
                "Multiply": "*",
                "MatrixMultiply": "@",
                "Modulo": "%",
            }.get(node.operator.__class__.__name__)
            return self._binop(node, symbol, left, right, node.left, node.right)
        if isinstance(node, cst.Subscript):
            base = self.ev(node.value)
            for element in node.slice:
                self._children(element)
            if base.kind == "tensor":
                return base.with_(name=None) if base.name else base
            if base.producer == "shape":  # x.shape[-1], x.size()[0]: one dimension
                return Value("scalar", SIZE)
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
        if isinstance(node, cst.List | cst.Tuple) and node.elements:
            values = [self.ev(e.value) for e in node.elements]
            hull = values[0]
            for value in values[1:]:
                hull = join(hull, value)
            return Value(hull.kind if hull.kind == "scalar" else "unknown", hull.interval)
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
            self._assign(
                comp.target, Value("tensor" if iterable.is_tensor else "unknown"), comp.iter
            )
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
        dotted = self.dotted(node)
        if dotted is not None and dotted in self.env:
            return self.env[dotted]
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
        if attr == "shape":
            return Value("scalar", SIZE, producer="shape")
        if attr == "ndim":
            return Value("scalar", COUNT)
        if attr in ("dtype", "device", "is_cuda", "requires_grad"):
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
        table = {
            "eps": lim.eps,
            "tiny": lim.tiny,
            "smallest_normal": lim.tiny,
            "max": lim.max,
            "min": -lim.max,
        }
        if attr in table:
            return Value("scalar", constant(table[attr]))
        return Value("scalar")

    def _constructed(self, qual: str) -> Value:
        """`nn.BCELoss()` and friends: a value that behaves like the op when called."""
        found = CATALOGUE.lookup(qual)
        leaf = qual.rsplit(".", 1)[-1]
        if found and found[0].kind == "risky" and leaf[:1].isupper():
            return Value("callable", callable_op=found[0].op)
        if leaf in ("Parameter", "Tensor", "Variable", "Buffer") or not leaf[:1].isupper():
            return Value("tensor")  # `nn.Parameter(...)`, `torch.zeros(...)`: data, not a layer
        return Value("callable")

    def _binop(
        self,
        node: cst.CSTNode,
        symbol: str | None,
        left: Value,
        right: Value,
        left_node: cst.BaseExpression,
        right_node: cst.BaseExpression,
    ) -> Value:
        """The value of `left <symbol> right`, in the dtype their promotion gives (an
        explicitly upcast operand computes the op in float32, whatever the unit's dtype)."""
        explicit = promoted(self.dtype, left, right)
        if explicit in ("float32", "float64"):
            left, right = restore_literal(left), restore_literal(right)
        result = self._binop_value(
            node, symbol, left, right, left_node, right_node, explicit or self.dtype
        )
        reason = zeros.after_binop(symbol, left, right, result)
        if reason is not None:
            result = result.with_(zero_reason=reason)
        if grad_free(left, right):
            self.grad_free_op(node)
            result = result.with_(no_grad=True)
        if explicit in ("float32", "float64") and result.fp16_zero_eps is not None:
            result = result.with_(fp16_zero_eps=None, fp16_interval=None)
        return result.with_(dtype=explicit) if result.kind == "tensor" else result

    def _binop_value(
        self,
        node: cst.CSTNode,
        symbol: str | None,
        left: Value,
        right: Value,
        left_node: cst.BaseExpression,
        right_node: cst.BaseExpression,
        dtype: str,
    ) -> Value:
        kind = tensor_kind(left, right)
        if symbol in ("/", "//"):
            if right.is_tensor:
                self._check_division(node, right, right_node, left)
            elif zeros.can_reach_zero(right, right_node):
                self._check_division(node, right, right_node, left, rule=RuleId.UNKNOWN_OPERAND)
            quotient = div(left.interval, right.interval, dtype)
            return Value(
                kind,
                zeros.floored(quotient) if symbol == "//" else quotient,
                neg_inf_filled=left.neg_inf_filled,
                producer=scaled_product(left, right),
            )
        if symbol == "**":
            exponent = right.interval.lo if right.interval.lo == right.interval.hi else None
            if left.is_tensor:
                self._check_pow(node, left, left_node, exponent)
            elif exponent is not None and exponent < 0 and zeros.can_reach_zero(left, left_node):
                self._check_pow(node, left, left_node, exponent, rule=RuleId.UNKNOWN_OPERAND)
            if exponent == 2:
                return Value(kind, square(left.interval), producer="square", norm_of=left.name)
            if exponent is not None and exponent > 0 and left.interval.nonnegative():
                return Value(kind, Interval(0.0, INF, left.interval.positive()))
            return Value(kind)
        if symbol == "+":
            return self._add(node, left, right, left_node, right_node, kind, dtype)
        if symbol == "-":
            result = Value(
                kind, sub(left.interval, right.interval, dtype), neg_inf_filled=left.neg_inf_filled
            )
            if right.max_of is not None and left.name == right.max_of:
                result = result.with_(interval=Interval(-INF, 0.0))  # x - max(x) <= 0
            if left.interval == constant(1.0) and right.producer == "sigmoid":
                result = result.with_(producer="one_minus_sigmoid", name=right.name)
            if left.producer == "exp" and right.interval == constant(1.0) and left.is_tensor:
                self._emit_pattern(
                    node,
                    CATALOGUE.by_op["exp"],
                    RuleId.EXPM1,
                    left_node,
                    left,
                    self._framework(None),
                    absorb=("exp",),
                )
            if left.absorbed_eps or right.absorbed_eps:
                result = result.with_(absorbed_eps=left.absorbed_eps or right.absorbed_eps)
            if (
                left.interval.lo == left.interval.hi
                and right.producer is not None
                and result.producer is None
            ):
                result = result.with_(
                    producer=right.producer if right.producer in ("softmax", "sigmoid") else None,
                    name=right.name,
                )
            return result
        if symbol == "*":
            same = (
                isinstance(left_node, cst.Name)
                and isinstance(right_node, cst.Name)
                and left_node.value == right_node.value
            )
            if same:
                return Value(kind, square(left.interval), producer="square", norm_of=left.name)
            return Value(
                kind,
                mul(left.interval, right.interval, dtype),
                neg_inf_filled=left.neg_inf_filled or right.neg_inf_filled,
                producer=scaled_product(left, right),
            )
        if symbol == "@":
            return product((left_node, right_node))
        return Value(kind)

    def _add(
        self,
        node: cst.CSTNode,
        left: Value,
        right: Value,
        left_node: cst.BaseExpression,
        right_node: cst.BaseExpression,
        kind: str,
        dtype: str,
    ) -> Value:
        a, b = left.interval, right.interval
        absorbed = left.absorbed_eps or right.absorbed_eps
        if a.lo == a.hi and b.lo == b.hi and not math.isinf(a.lo) and not math.isinf(b.lo):
            total, note = fold_add(a.lo, b.lo, dtype)
            return Value(
                "scalar" if kind == "scalar" else kind,  # type: ignore[arg-type]
                constant(total),
                absorbed_eps=note or absorbed,
            )
        result = Value(kind, add(a, b, dtype), absorbed_eps=absorbed)  # type: ignore[arg-type]
        for value, other in ((left, right), (right, left)):
            iv = other.interval
            if iv.lo == iv.hi == 1.0 and value.is_tensor and result.producer is None:
                result = result.with_(producer="one_plus")
        eps_value = next(
            (
                v.interval.lo
                for v in (left, right)
                if v.interval.lo == v.interval.hi and 0 < v.interval.lo < 1e-3
            ),
            None,
        )
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
            if carrier.interval == constant(0.0):  # the vanished literal itself
                result = result.with_(
                    fp16_zero_eps=carrier.fp16_zero_eps, fp16_interval=rest.interval
                )
            elif carrier.fp16_interval is not None:
                result = result.with_(
                    fp16_zero_eps=carrier.fp16_zero_eps,
                    fp16_interval=add(carrier.fp16_interval, rest.interval, dtype),
                )
        if left.producer == "square" and right.producer == "square":
            result = result.with_(producer="square")
        return result


def upcast_call(node: cst.BaseExpression) -> bool:
    """`x.float()`, `x.to(torch.float32)`, `tf.cast(x, tf.float32)` (any `.to`/`cast`)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    name = (
        func.attr.value
        if isinstance(func, cst.Attribute)
        else func.value
        if isinstance(func, cst.Name)
        else ""
    )
    return name in UPCASTS


def product(factors: Sequence[cst.BaseExpression]) -> Value:
    """A matrix product, unless a factor is upcast (`q.float() @ k.float()`: a float32
    product, or a type error for mixed dtypes)."""
    return Value("tensor", producer=None if any(upcast_call(n) for n in factors) else "matmul")


def scaled_product(left: Value, right: Value) -> str | None:
    """`q @ k.T * scale` (or `/ sqrt(d)`) is still the product: scaling after a float16
    overflow keeps the inf."""
    for a, b in ((left, right), (right, left)):
        if a.producer == "matmul" and (not b.is_tensor or b.interval.lo == b.interval.hi):
            return "matmul"
    return None
