"""Statements in order: assignments, branches joined, loops run twice, guards applied.

A mixin of FunctionAnalyzer (analyzer.py), which holds the state these methods share; what
it calls in the other mixins is declared in interface.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import libcst as cst

from analyzers.dtypes import round_to
from analyzers.static import zeros
from analyzers.static.conditions import Fact, facts_from, refine
from analyzers.static.interface import AnalyzerInterface
from analyzers.static.prefilter import ClassFacts
from analyzers.static.values import (
    FULL,
    INF,
    NONNEG,
    POSITIVE,
    UNKNOWN,
    Interval,
    Kind,
    Value,
    constant,
    join,
)
from analyzers.static.vocabulary import (
    ASSERT_BOUNDS,
    CHECK_FUNCTIONS,
    MODEL_METHODS,
    SCALAR_ANNOTATION,
    TENSOR_ANNOTATION,
)


class StatementsMixin(AnalyzerInterface):
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
            self._function(
                stmt,
                f"{self.function}.{stmt.name.value}"
                if self.function != "<module>"
                else stmt.name.value,
                None,
            )
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
            symbol = {
                "DivideAssign": "/",
                "FloorDivideAssign": "//",
                "PowerAssign": "**",
                "AddAssign": "+",
                "SubtractAssign": "-",
                "MultiplyAssign": "*",
            }.get(small.operator.__class__.__name__)
            result = (
                zeros.after_increment(
                    self._binop(small, symbol, left, right, small.target, small.value)
                )
                if symbol
                else UNKNOWN
            )
            self._assign(small.target, result, small.value)
        elif isinstance(small, cst.Expr):
            self.ev(small.value)
            self._discarded_guard(small.value)
            self._apply(self._checked_condition(small.value))
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
        elif isinstance(
            small, cst.Del | cst.Global | cst.Nonlocal | cst.Import | cst.ImportFrom | cst.Pass
        ):
            return False
        else:
            self._children(small)
        return False

    def _checked_condition(self, expr: cst.BaseExpression) -> list[Fact]:
        """`torch._check(x > 0, ...)` and `tf.debugging.assert_positive(x)` act as asserts."""
        if not isinstance(expr, cst.Call) or not expr.args:
            return []
        qual = self.resolve(expr.func) or ""
        first = expr.args[0].value
        if qual in CHECK_FUNCTIONS:
            return facts_from(first, True, self.const)
        bound = ASSERT_BOUNDS.get(qual)
        name = self.dotted(first)
        if bound is None or name is None:
            return []
        lo, lo_open = bound
        return [Fact(name, lo=lo, lo_open=lo_open)]

    def _assign(self, target: cst.BaseExpression, value: Value, source: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            self.env[name] = value.with_(name=name) if value.name is None else value
            if isinstance(source, cst.Call):
                self.call_results.add(name)
            else:
                self.call_results.discard(name)
        elif isinstance(target, cst.Attribute) and (dotted := self.dotted(target)) is not None:
            self.env[dotted] = value.with_(name=dotted)
        elif isinstance(target, cst.Tuple | cst.List):
            kind: Kind = "tensor" if value.kind == "tensor" else "unknown"
            for element in target.elements:
                self._assign(element.value, Value(kind), source)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            name = target.value.value
            old = self.env.get(name, Value("tensor"))
            merged = join(old, value).with_(kind=old.kind, producer=old.producer, name=name)
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
            self._assign(
                stmt.target, Value("tensor" if iterable.is_tensor else "unknown"), stmt.iter
            )
            self._loop_index(stmt.target, stmt.iter)
        else:
            self.ev(stmt.test)
        before = dict(self.env)
        self._block(stmt.body)
        self.env = self._join_envs(before, self.env)
        self._block(stmt.body)  # once more with what the first iteration may have changed
        self.env = self._join_envs(before, self.env)
        self.env.update(zeros.accumulators(before, self.env))
        if stmt.orelse is not None:
            self._block(stmt.orelse.body)

    def _loop_index(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for i in range(a, b)`: i >= a (>= 0 without a start); with a negative step,
        i > b. `for i, x in enumerate(xs, k)`: i >= k. So `(i + 1)` and `(5 + i) / 6` are
        known positive inside the loop."""
        if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
            return
        name = iterable.func.value
        positional = [a.value for a in iterable.args if a.keyword is None and not a.star]
        index: cst.BaseExpression | None = None
        bound = Interval(0.0, INF)
        if name == "range" and positional and name not in self.env:
            index = target
            values = [self.ev(v).interval for v in positional]
            step = values[2] if len(values) > 2 else constant(1.0)
            if step.lo > 0 and len(values) > 1:
                bound = Interval(values[0].lo, INF)
            elif step.hi < 0:
                stop = values[1].lo
                bound = Interval(stop + 1 if math.isfinite(stop) else -INF, values[0].hi)
        elif (
            name == "enumerate"
            and name not in self.env
            and isinstance(target, cst.Tuple)
            and target.elements
        ):
            index = target.elements[0].value
            start = next(
                (
                    a.value
                    for a in iterable.args
                    if a.keyword is not None and a.keyword.value == "start"
                ),
                positional[1] if len(positional) > 1 else None,
            )
            if start is not None:
                bound = Interval(self.ev(start).interval.lo, INF)
        if isinstance(index, cst.Name):
            self.env[index.value] = Value("scalar", bound, name=index.value)

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
            value = self.env.get(fact.name) or Value("unknown", name=fact.name)
            iv = value.interval
            lo, hi, lo_open = refine(iv.lo, iv.hi, iv.lo_open, fact)
            refined = Interval(lo, hi, lo_open, iv.not_zero or fact.nonzero)
            self.env[fact.name] = value.with_(interval=refined, fp16_interval=None)

    def _function(self, func: cst.FunctionDef, qualname: str, cls: ClassFacts | None) -> None:
        self.function = qualname
        model_method = cls is not None and cls.is_model and func.name.value in MODEL_METHODS
        for attr, (lo, lo_open, hi) in cls.attr_ranges.items() if cls else ():
            self.env[f"self.{attr}"] = Value(
                "tensor", Interval(lo, hi, lo_open), name=f"self.{attr}"
            )
        for attr, text in cls.attr_defaults.items() if cls else ():  # `self.eps = eps`
            self.env[f"self.{attr}"] = self._from_default(
                cst.parse_expression(text), Value("unknown", name=f"self.{attr}")
            )
        params = func.params
        all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
        self.call_results = set()
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
            positive = value.with_(kind="scalar", interval=POSITIVE)
            if round_to(iv.lo, "float16") == 0.0:  # `eps=1e-8`: positive, but 0.0 in float16
                positive = positive.with_(fp16_zero_eps=iv.lo, fp16_interval=NONNEG)
            return positive
        if iv.lo == 0 and default.fp16_zero_eps is not None:  # `eps=1e-8` in float16: it
            # vanishes, unless the value meets one computed in float32 (`restore_literal`)
            return value.with_(
                kind="scalar",
                interval=NONNEG,
                fp16_zero_eps=default.fp16_zero_eps,
                fp16_interval=NONNEG,
            )
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
