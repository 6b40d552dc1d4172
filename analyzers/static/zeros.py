"""Why a divisor the analysis cannot bound may still be 0: provenance for `unknown-operand`.

A plain `a / b` of two parameters is usually a ratio the caller keeps valid, so the static
pass says nothing about it. Some values of unknown range are different: how they were built
makes 0 an ordinary outcome, not an accident.

* a sum or difference of values it cannot follow, written as the divisor (`fps + fns + tps`
  of counts a helper returned); assigned first, when it adds values it cannot follow
  (`updated = total + batch_count`, a moving average `decay * v + (1 - decay) * g * g`:
  0 wherever every term is, as on an empty batch or a zero gradient) or when a constant is
  taken away (`keep = 1.0 - self.rate` with a rate that may be 1); `elapsed = time() -
  start` and other differences of two unknowns are not worth following through names, nor
  `d + 1e-10`, the usual guard;
* a square root of a number the function computed by a call (`math.sqrt(variance)` of a
  variance it read off a metric: 0 for constant data); not of a parameter, an attribute,
  an alias of one or a cast (`math.sqrt(float(self.key_dim))`, `fan_in =
  module.in_features`), which are scales set once, not statistics;
* a floor division by a constant (`depth // 2` is 0 for a depth of 1);
* a counter that starts at 0 and is only added to in a loop (the loop may not run: an empty
  corpus leaves `reference_length = 0`);
* a product or a quotient whose factor or dividend is one of these (`ratio = hits / total`
  is 0 when `hits` stayed 0).

Such a value carries the reason in `Value.zero_reason`, through assignments, so that a
division by it, here or lines later, is a candidate (rules.py `unknown-operand`): never shown
unless the dynamic pass proves it. Tensors are not concerned: their divisions are checked
against their interval anyway.
"""

from __future__ import annotations

import math

import libcst as cst

from analyzers.static.values import Interval, Value, constant

SUM_OF_UNKNOWNS = "is a sum or difference of values the analysis cannot follow"
OFFSET = "is a difference between a constant and a value the analysis cannot follow"
ROOT = "is a square root, 0 wherever the value under it is (the variance of constant data)"
TOTAL = "is a sum of values the analysis cannot follow, 0 wherever they all are"
FLOOR_DIVISION = "is a floor division, 0 whenever the dividend is smaller than the divisor"
ACCUMULATOR = "starts at 0 and only a loop changes it, which may not run"
ZERO = constant(0.0)
THROUGH = "is 0 where a factor or dividend is 0, and one of them "


def can_reach_zero(value: Value, node: cst.BaseExpression) -> bool:
    """A divisor worth a candidate: not a tensor, 0 in its range, and built in a way that
    makes 0 an ordinary outcome (a sum of two unknowns only where it is written)."""
    if value.zero_reason is None or value.is_tensor or value.interval.nonzero():
        return False
    return value.zero_reason != SUM_OF_UNKNOWNS or (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add | cst.Subtract)
    )


def computed_here(node: cst.BaseExpression | None, call_results: set[str]) -> bool:
    """A local variable the function last assigned a call's result: a statistic it
    computed (`var = metric.get_metric()`), not a parameter or an alias of an attribute
    (`fan_in = module.in_features`)."""
    return isinstance(node, cst.Name) and node.value in call_results


def after_binop(symbol: str | None, left: Value, right: Value, result: Value) -> str | None:
    """The reason `left <symbol> right` (already evaluated to `result`) may be 0, or None."""
    if result.is_tensor or result.interval.nonzero():
        return None
    if symbol in ("+", "-"):
        if result.kind == "unknown":
            if _lowered(symbol, left, right):
                return OFFSET
            return (
                TOTAL
                if symbol == "+" and not _fixed(left) and not _fixed(right)
                else SUM_OF_UNKNOWNS
            )
        return _through(left.zero_reason or right.zero_reason, prefix=False)
    if symbol == "*":
        return _through(left.zero_reason or right.zero_reason)
    if symbol == "/":
        return _through(left.zero_reason)  # the dividend's 0 is the quotient's
    if symbol == "//":
        divisor = right.interval
        if divisor.lo == divisor.hi and abs(divisor.lo) > 1:
            return FLOOR_DIVISION
        return _through(left.zero_reason)
    return None


def _fixed(value: Value) -> bool:
    return value.interval.lo == value.interval.hi


def _lowered(symbol: str, left: Value, right: Value) -> bool:
    """`1.0 - rate`, `n - 1`, `n + (-1)`: a constant subtracted or taken away from. `x + eps`
    is not: adding a positive constant is how code guards a divisor."""
    if symbol == "-":
        return _fixed(left) or _fixed(right)
    return any(_fixed(v) and v.interval.lo < 0 for v in (left, right))


def _through(reason: str | None, prefix: bool = True) -> str | None:
    """A result's reason from its operand's (said of the operand for a product or a
    quotient); an operand's sum of unknowns is not carried further."""
    if reason is None or reason in (SUM_OF_UNKNOWNS, TOTAL):
        return None
    if not prefix or reason.startswith(THROUGH):
        return reason
    return f"{THROUGH}{reason.removeprefix('is ')}"


def after_increment(value: Value) -> Value:
    """`total += n` on a total the analysis cannot follow is a running total (a meter's
    count), not an offset that lands on 0: it keeps no reason of its own."""
    if value.zero_reason in (OFFSET, SUM_OF_UNKNOWNS, TOTAL):
        return value.with_(zero_reason=None)
    return value


def accumulators(before: dict[str, Value], after: dict[str, Value]) -> dict[str, Value]:
    """The variables a loop turned from a literal 0 into something else, without a reason
    yet, each marked as an accumulator that may have stayed 0 (the env after the loop is
    the join of both, so 0 is still in their range)."""
    marked: dict[str, Value] = {}
    for name, value in after.items():
        start = before.get(name)
        if start is None or start.interval != ZERO or start.is_tensor or value.is_tensor:
            continue
        if value.interval == ZERO or value.zero_reason is not None:
            continue
        if value.interval.lo <= 0 <= value.interval.hi:
            marked[name] = value.with_(zero_reason=ACCUMULATOR)
    return marked


def floored(iv: Interval) -> Interval:
    """The range of a floor division, from the range of the true quotient."""
    lo = float(math.floor(iv.lo)) if math.isfinite(iv.lo) else iv.lo
    hi = float(math.floor(iv.hi)) if math.isfinite(iv.hi) else iv.hi
    return Interval(lo, hi)
