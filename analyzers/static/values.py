"""Abstract values: what the static pass knows about an expression.

An interval in the assumed dtype (DEBAR's interval abstraction, kept at source level), whether
the value is a tensor, and the provenance the finding's `why` sentence is made of: which op
produced the value, and which epsilon silently vanished on the way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Literal

from analyzers.dtypes import add_in, round_to

INF = math.inf
Kind = Literal["tensor", "scalar", "unknown", "callable", "module", "finfo"]


@dataclass(frozen=True)
class Interval:
    lo: float = -INF
    hi: float = INF
    lo_open: bool = False  # (0, inf]: positive by convention (exp, softplus)
    not_zero: bool = False  # a guard said `x != 0`: the interval may straddle 0 but omit it

    @property
    def unknown(self) -> bool:
        return self.lo == -INF and self.hi == INF

    def positive(self) -> bool:
        return self.lo > 0 or (self.lo == 0 and self.lo_open)

    def nonnegative(self) -> bool:
        return self.lo >= 0

    def nonzero(self) -> bool:
        return self.not_zero or self.positive() or self.hi < 0

    def join(self, other: Interval) -> Interval:
        if self.lo < other.lo:
            lo, lo_open = self.lo, self.lo_open
        elif other.lo < self.lo:
            lo, lo_open = other.lo, other.lo_open
        else:
            lo, lo_open = self.lo, self.lo_open and other.lo_open
        return Interval(lo, max(self.hi, other.hi), lo_open, self.nonzero() and other.nonzero())

    def meet_lo(self, lo: float, lo_open: bool = False) -> Interval:
        if lo > self.lo or (lo == self.lo and lo_open):
            return Interval(lo, max(self.hi, lo), lo_open)
        return self

    def meet_hi(self, hi: float) -> Interval:
        return Interval(min(self.lo, hi), min(self.hi, hi), self.lo_open) if hi < self.hi else self

    def describe(self) -> str:
        lo = "(" if self.lo_open or self.lo == -INF else "["
        hi = ")" if self.hi == INF else "]"
        return f"{lo}{_fmt(self.lo)}, {_fmt(self.hi)}{hi}"


def _fmt(value: float) -> str:
    if value == INF:
        return "inf"
    if value == -INF:
        return "-inf"
    return f"{value:.4g}"


FULL = Interval()
NONNEG = Interval(0.0, INF)
POSITIVE = Interval(0.0, INF, lo_open=True)
UNIT = Interval(0.0, 1.0)
# A tensor dimension, a length, an element count (`x.shape[-1]`, `x.size(1)`, `len(x)`,
# `x.numel()`): taken as at least 1. A tensor with an empty dimension is a shape bug that
# fails elsewhere first, and treating sizes as possibly 0 flagged every `sqrt(d)` and
# `log2(n)` of a dimension, the most common noise on real code.
SIZE = Interval(1.0, INF)
COUNT = Interval(0.0, INF)  # a loop index from range()/enumerate(), an ndim, an arange


def constant(value: float) -> Interval:
    return Interval(value, value)


def _mul(a: float, b: float) -> float:
    if (a == 0 and math.isinf(b)) or (b == 0 and math.isinf(a)):
        return 0.0
    return a * b


def add(a: Interval, b: Interval, dtype: str) -> Interval:
    lo = _bound_sum(a.lo, b.lo, dtype, -INF)
    hi = _bound_sum(a.hi, b.hi, dtype, INF)
    if math.isnan(lo):
        lo = -INF
    if math.isnan(hi):
        hi = INF
    lo_open = (a.lo_open and b.lo >= 0) or (b.lo_open and a.lo >= 0)
    if lo > 0:
        lo_open = False
    return Interval(lo, hi, lo_open and lo == 0)


def _bound_sum(x: float, y: float, dtype: str, undefined: float) -> float:
    """One end of an interval sum; inf + -inf means the bound is lost."""
    if math.isinf(x) or math.isinf(y):
        return x + y if x != -y else undefined
    return add_in(x, y, dtype)


def integral(a: Interval) -> Interval:
    """int() or round() of a value in `a`: the ends move to the integers outside them."""
    lo = math.floor(a.lo) if math.isfinite(a.lo) else a.lo
    hi = math.ceil(a.hi) if math.isfinite(a.hi) else a.hi
    return Interval(float(lo), float(hi))


def neg(a: Interval) -> Interval:
    return Interval(-a.hi, -a.lo)


def sub(a: Interval, b: Interval, dtype: str) -> Interval:
    return add(a, neg(b), dtype)


def _sign_only(a: Interval, b: Interval, positive_when: bool) -> Interval:
    """A product or quotient whose magnitude is unbounded but whose sign the operands fix:
    [0, inf] when both are >= 0 or both <= 0, [-inf, 0] when they differ (`-x**2 / s**2`,
    `-0.5 * d2 * scale`). FULL when an operand's sign is unknown."""
    a_sign = 1 if a.nonnegative() else -1 if a.hi <= 0 else 0
    b_sign = 1 if b.nonnegative() else -1 if b.hi <= 0 else 0
    if not a_sign or not b_sign:
        return FULL
    if a_sign == b_sign:
        return Interval(0.0, INF, positive_when)
    return Interval(-INF, 0.0)


def mul(a: Interval, b: Interval, dtype: str) -> Interval:
    if a.unknown or b.unknown:
        return _sign_only(a, b, a.positive() and b.positive())
    products = [_mul(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    lo, hi = round_to(min(products), dtype), round_to(max(products), dtype)
    lo_open = lo == 0 and a.positive() and b.positive()
    return Interval(lo, hi, lo_open)


def square(a: Interval) -> Interval:
    if a.lo >= 0:
        return Interval(_mul(a.lo, a.lo), _mul(a.hi, a.hi), a.positive())
    if a.hi <= 0:
        return Interval(_mul(a.hi, a.hi), _mul(a.lo, a.lo), a.hi < 0)
    return Interval(0.0, max(_mul(a.lo, a.lo), _mul(a.hi, a.hi)))


def absolute(a: Interval) -> Interval:
    if a.lo >= 0:
        return a
    if a.hi <= 0:
        return neg(a)
    return Interval(0.0, max(-a.lo, a.hi))


def div(a: Interval, b: Interval, dtype: str) -> Interval:
    if not b.nonzero() or a.unknown or b.unknown:
        # a divisor that may be 0 gives ±inf (flagged by the division check itself) or NaN
        # for 0/0; the sign of every other quotient still follows the operands' signs
        return _sign_only(a, b, a.positive() and b.positive())
    inv = Interval(
        1 / b.hi if b.hi != INF else 0.0, 1 / b.lo if b.lo > 0 else INF, lo_open=b.positive()
    )
    if b.hi < 0:
        inv = Interval(1 / b.hi, 1 / b.lo if b.lo != -INF else 0.0)
    return mul(a, inv, dtype)


@dataclass(frozen=True)
class Value:
    """One abstract value; `producer` names the op whose output this is (for patterns)."""

    kind: Kind = "unknown"
    interval: Interval = FULL
    producer: str | None = None
    origin: str = ""  # a phrase for `why`: "comes from softmax, which ..."
    absorbed_eps: str | None = None  # "1 + 1e-10 == 1 in float32"
    fp16_zero_eps: float | None = None  # a literal epsilon that is 0.0 in float16
    fp16_interval: Interval | None = None  # the interval once that epsilon is gone
    neg_inf_filled: bool = False  # masked_fill(..., -inf) happened on the way
    callable_op: str | None = None  # `nn.BCELoss()`: calling it is that op
    name: str | None = None  # the local variable it was read from
    max_of: str | None = None  # `x.max(...)`: so `x - x.max(...)` is known to be <= 0
    norm_of: str | None = None  # `x.norm()`, `(x ** 2).sum()`: so `x / x.norm()` is recognised
    # the float dtype an explicit cast put this value in (`x.float()`, `tf.cast(x, tf.float32)`),
    # and what follows from it by type promotion; None: the unit's dtype (the configuration's)
    dtype: str | None = None
    # no gradient flows back through it: `stop_gradient(x)`, `x.detach()`, and what is computed
    # from such values and constants alone (so a `where` cannot leak a NaN gradient from it)
    no_grad: bool = False
    # why this value of unknown range may be 0 all the same (zeros.py): a division by it is a
    # candidate for the dynamic pass
    zero_reason: str | None = None

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    def with_(self, **changes: object) -> Value:
        return replace(self, **changes)  # type: ignore[arg-type]


UNKNOWN = Value()


def join(a: Value, b: Value) -> Value:
    """The value after two branches meet: what holds on both."""
    if a == b:
        return a
    kind: Kind = (
        a.kind if a.kind == b.kind else ("tensor" if "tensor" in (a.kind, b.kind) else "unknown")
    )
    same = a.producer == b.producer
    return Value(
        kind=kind,
        interval=a.interval.join(b.interval),
        producer=a.producer if same else None,
        origin=a.origin if same else (a.origin or b.origin),
        absorbed_eps=a.absorbed_eps or b.absorbed_eps,
        fp16_zero_eps=a.fp16_zero_eps or b.fp16_zero_eps,
        fp16_interval=a.fp16_interval or b.fp16_interval,
        neg_inf_filled=a.neg_inf_filled or b.neg_inf_filled,
        callable_op=a.callable_op if a.callable_op == b.callable_op else None,
        name=a.name if a.name == b.name else None,
        max_of=a.max_of if a.max_of == b.max_of else None,
        norm_of=a.norm_of if a.norm_of == b.norm_of else None,
        dtype=a.dtype if a.dtype == b.dtype else None,
        no_grad=a.no_grad and b.no_grad,
        zero_reason=a.zero_reason or b.zero_reason,
    )


def grad_free(*values: Value) -> bool:
    """No gradient reaches the inputs through these values: each is cut off from autograd
    (`Value.no_grad`) or a Python scalar (a literal, a size), which frameworks never
    differentiate through."""
    return all(v.no_grad or v.kind == "scalar" for v in values)


FLOAT_WIDTH = {"bfloat16": 16, "float16": 16, "float32": 32, "float64": 64}


def cast_target(text: str) -> str | None:
    """The float dtype a cast names (`torch.float32`, `tf.float32`, `"float32"`, `torch.half`,
    `torch.double`, `torch.float`); None for anything else (an integer dtype, `x.dtype`)."""
    for dtype in ("bfloat16", "float16", "float64", "float32"):
        if dtype in text:
            return dtype
    if re.search(r"\bhalf\b", text):
        return "float16"
    if re.search(r"\bdouble\b", text):
        return "float64"
    if re.search(r"\bfloat\b", text) and ".dtype" not in text:
        return "float32"
    return None


def promoted(unit: str, *values: Value) -> str | None:
    """The explicit dtype of an op on these values, by PyTorch's and NumPy's promotion among
    tensors (a Python scalar does not promote): the widest of their dtypes, each value's own
    or the unit's; None when that is just the unit's dtype."""
    tensors = [v.dtype for v in values if v.kind == "tensor"]
    explicit = [d for d in tensors if d is not None]
    if not explicit:
        return None
    widest = max([d or unit for d in tensors], key=lambda d: FLOAT_WIDTH.get(d, 32))
    return None if widest == unit and None in tensors else widest


def restore_literal(value: Value) -> Value:
    """A literal epsilon that vanished in a float16 unit, back to its value: it meets a value
    computed in a wider dtype, where it exists."""
    if value.fp16_zero_eps is None or value.interval.lo != 0.0:
        return value
    if value.interval == constant(0.0):  # the literal itself
        return value.with_(
            interval=constant(value.fp16_zero_eps), fp16_zero_eps=None, fp16_interval=None
        )
    if value.kind == "scalar" and value.interval.hi == INF:  # a parameter defaulting to it
        return value.with_(
            interval=Interval(0.0, INF, True), fp16_zero_eps=None, fp16_interval=None
        )
    return value


def tensor_kind(*values: Value) -> Kind:
    if any(v.kind == "tensor" for v in values):
        return "tensor"
    if values and all(v.kind == "scalar" for v in values):
        return "scalar"
    return "unknown"


def eps_text(value: float) -> str:
    return f"{value:g}"


def fold_add(a: float, b: float, dtype: str) -> tuple[float, str | None]:
    """Add two constants in the dtype; say so when the smaller one vanished."""
    result = add_in(a, b, dtype)
    small, large = sorted((a, b), key=abs)
    if small != 0 and result == round_to(large, dtype) and large != 0:
        return result, f"{_fmt(large)} + {eps_text(small)} == {_fmt(large)} in {dtype}"
    return result, None
