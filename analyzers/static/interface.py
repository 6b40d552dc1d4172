"""What each analysis mixin may call on the others, declared once.

`FunctionAnalyzer` (analyzer.py) combines four mixins (statements, expressions, calls,
checks) that call into each other: an expression evaluates a call, a call applies an op's
check, a check records a finding. Each mixin inherits this class, so mypy checks those calls
against the signatures below, and the real definitions (which come first in the combined
class's MRO) must stay compatible with them; no mixin needs to import the class that
combines them, which imports every mixin.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from analyzers.catalogue import OpSpec
from analyzers.static.conditions import Fact
from analyzers.static.prefilter import ClassFacts
from analyzers.static.records import AnalyzerState
from analyzers.static.rules import RuleId
from analyzers.static.values import Interval, Value


class AnalyzerInterface(AnalyzerState):
    """The methods one mixin calls on another (the module named beside each defines it)."""

    def _apply(self, facts: list[Fact]) -> None:
        raise NotImplementedError  # statements.py

    def _apply_spec(
        self,
        node: cst.Call,
        spec: OpSpec,
        qual: str | None,
        framework: str,
        args: list[tuple[str | None, Value]],
        values: list[Value],
        receiver: tuple[cst.BaseExpression, Value] | None,
    ) -> Value:
        raise NotImplementedError  # checks.py

    @staticmethod
    def _arg(
        node: cst.Call, index: int, keywords: tuple[str, ...] = ()
    ) -> cst.BaseExpression | None:
        raise NotImplementedError  # calls.py

    def _assign(self, target: cst.BaseExpression, value: Value, source: cst.BaseExpression) -> None:
        raise NotImplementedError  # statements.py

    def _binop(
        self,
        node: cst.CSTNode,
        symbol: str | None,
        left: Value,
        right: Value,
        left_node: cst.BaseExpression,
        right_node: cst.BaseExpression,
    ) -> Value:
        raise NotImplementedError  # expressions.py

    def _block(self, body: cst.BaseSuite | cst.Module | Sequence[cst.CSTNode]) -> bool:
        raise NotImplementedError  # statements.py

    def _call(self, node: cst.Call) -> Value:
        raise NotImplementedError  # calls.py

    def _check_division(
        self,
        node: cst.CSTNode,
        divisor: Value,
        divisor_node: cst.BaseExpression,
        numerator: Value,
        framework: str | None = None,
        rule: str = RuleId.UNGUARDED_DOMAIN,
    ) -> None:
        raise NotImplementedError  # checks.py

    def _check_pow(
        self,
        node: cst.CSTNode,
        base: Value,
        base_node: cst.BaseExpression,
        exponent: float | None,
        framework: str | None = None,
        rule: str = RuleId.UNGUARDED_DOMAIN,
    ) -> None:
        raise NotImplementedError  # checks.py

    def _children(self, node: cst.CSTNode) -> None:
        raise NotImplementedError  # statements.py

    def _clamped(
        self, iv: Interval, base: str, node: cst.Call, args: list[tuple[str | None, Value]]
    ) -> Interval:
        raise NotImplementedError  # calls.py

    def _constructed(self, qual: str) -> Value:
        raise NotImplementedError  # expressions.py

    def _discarded_guard(self, expr: cst.BaseExpression) -> None:
        raise NotImplementedError  # checks.py

    def _emit_pattern(
        self,
        node: cst.CSTNode,
        spec: OpSpec,
        rule: str,
        operand_node: cst.BaseExpression,
        operand: Value,
        framework: str,
        absorb: tuple[str, ...] = (),
    ) -> None:
        raise NotImplementedError  # checks.py

    def _framework(self, qual: str | None) -> str:
        raise NotImplementedError  # analyzer.py

    def _from_logits(self, node: cst.Call) -> bool:
        raise NotImplementedError  # calls.py

    def _function(self, func: cst.FunctionDef, qualname: str, cls: ClassFacts | None) -> None:
        raise NotImplementedError  # statements.py

    def _record(
        self,
        node: cst.CSTNode,
        spec: OpSpec,
        rule: str,
        framework: str,
        operand_src: str,
        why: str,
        interval: Interval | None,
        suggestion: str = "",
    ) -> None:
        raise NotImplementedError  # checks.py

    def code(self, node: cst.CSTNode) -> str:
        raise NotImplementedError  # analyzer.py

    def const(self, node: cst.BaseExpression) -> float | None:
        raise NotImplementedError  # analyzer.py

    def dotted(self, node: cst.BaseExpression) -> str | None:
        raise NotImplementedError  # analyzer.py

    def ev(self, node: cst.BaseExpression) -> Value:
        raise NotImplementedError  # expressions.py

    def ev_cached(
        self, operand: cst.BaseExpression, args: list[tuple[str | None, Value]], node: cst.Call
    ) -> Value:
        raise NotImplementedError  # calls.py

    def grad_free_op(self, node: cst.CSTNode) -> None:
        raise NotImplementedError  # checks.py

    def resolve(self, node: cst.BaseExpression) -> str | None:
        raise NotImplementedError  # analyzer.py
