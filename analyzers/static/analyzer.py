"""Abstract interpretation of one function (or a module's top level) over libcst.

Statements run in order with an environment of abstract values; branches are joined;
guards refine variables; every call and operator the catalogue knows is checked against its
domain as the value reaching it is evaluated. The result is a list of raw findings still
holding their libcst nodes; positions are resolved only when there is something to report.
"""

from __future__ import annotations

import libcst as cst

from analyzers.dtypes import round_to
from analyzers.static.calls import CallsMixin
from analyzers.static.checks import ChecksMixin
from analyzers.static.conditions import dotted_name
from analyzers.static.expressions import ExpressionsMixin
from analyzers.static.prefilter import ClassFacts
from analyzers.static.records import FileContext, Probe, RawFinding
from analyzers.static.statements import StatementsMixin
from analyzers.static.values import (
    Value,
    constant,
)


class FunctionAnalyzer(StatementsMixin, ExpressionsMixin, CallsMixin, ChecksMixin):
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
        self.probe: Probe | None = None
        self._seen: set[tuple[int, str, str]] = set()
        self.call_results: set[str] = set()
        self._code_cache: dict[int, str] = {}

    def run_module(self) -> list[RawFinding]:
        self.env = self._module_env()
        self._block(self.module.body)
        return self.findings

    def run_function(self, func: cst.FunctionDef, qualname: str) -> list[RawFinding]:
        self.env = self._module_env()
        self._function(func, qualname, self.cls)
        return self.findings

    def _module_env(self) -> dict[str, Value]:
        return {
            name: Value("scalar", constant(round_to(v, self.dtype)))
            for name, v in self.ctx.constants.items()
        }

    def code(self, node: cst.CSTNode) -> str:
        key = id(node)
        if key not in self._code_cache:
            self._code_cache[key] = self.module.code_for_node(node).strip()
        return self._code_cache[key]

    def dotted(self, node: cst.BaseExpression) -> str | None:
        return dotted_name(node)

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """A qualified name for an imported function; local names shadow imports."""
        dotted = self.dotted(node)
        if dotted is None:
            return None
        head, _, attr = dotted.partition(".")
        if head == "self" and self.cls is not None and attr in self.cls.attr_funcs:
            return self.cls.attr_funcs[attr]  # `self.attn_fn = F.softmax` in __init__
        if head in self.env and self.env[head].kind != "module":
            return None
        return self.ctx.imports.resolve(dotted)

    def const(self, node: cst.BaseExpression) -> float | None:
        """A compile-time number, without evaluating side effects twice."""
        saved_probe, saved_findings, saved_seen = self.probe, self.findings, self._seen
        self.probe, self.findings, self._seen = Probe(), [], set(saved_seen)
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
