"""What one unit's analysis produces and needs: raw findings, file facts, the probe.

Raw findings still hold their libcst nodes; the scanner turns them into `Finding`s once
positions are resolved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from analyzers.static.prefilter import ClassFacts, ImportMap
from analyzers.static.values import Interval, Value


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
class Probe:
    """While evaluating a `where` branch without its guard: which nodes would be flagged."""

    nodes: list[tuple[cst.CSTNode, str, str]] = field(default_factory=list)
    grad_free: set[int] = field(default_factory=set)  # ids of ops whose inputs need no gradient


class AnalyzerState:
    """The state the analysis mixins share, declared once so each mixin types against it."""

    module: cst.Module
    ctx: FileContext
    cls: ClassFacts | None
    dtype: str
    env: dict[str, Value]
    findings: list[RawFinding]
    stmt: cst.CSTNode
    function: str
    # the current function's locals last assigned a call's result (zeros.computed_here)
    call_results: set[str]
    probe: Probe | None
    _seen: set[tuple[int, str, str]]
    _code_cache: dict[int, str]
