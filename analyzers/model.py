"""The result model shared by every stage and every front end.

Findings and results are plain dataclasses that serialise to the JSON shapes of
analyzers/schemas/analysis-result.schema.json (docs/architecture.md, "Contracts"); the CLI,
the bot and the SARIF writer read only these.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["potential", "confirmed", "not-triggered", "error"]
Severity = Literal["error", "warning", "note"]

SCHEMA_VERSION = 1


def _json_float(value: float) -> float | str:
    """JSON has no infinities; intervals often do, so spell them as strings."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    return value


@dataclass(frozen=True)
class IntervalInfo:
    """The operand's range as the static pass knew it, in the dtype it assumed."""

    lo: float
    hi: float
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"lo": _json_float(self.lo), "hi": _json_float(self.hi), "dtype": self.dtype}


@dataclass
class Finding:
    """One risky operation on a changed line.

    `fingerprint` ignores line numbers on purpose: a push that only moves code must not
    produce a second comment for the same risk.
    """

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    function: str
    op: str
    framework: str
    call: str
    operand: str
    why: str
    rule: str
    severity: Severity = "warning"
    interval: IntervalInfo | None = None
    status: Status = "potential"
    suggestion: str | None = None
    trigger: dict[str, Any] | None = None
    reproducer: str | None = None
    # the fix stage's outcome for a confirmed finding (analyzers/fix/validate.py fix_record):
    # status validated (patch, suggestion lines start_line..end_line, validation figures),
    # none-validated (every candidate's rejection) or error (the stage's reason); None when
    # the stage did not run
    fix: dict[str, Any] | None = None
    error: str | None = None
    fingerprint: str = ""
    # the op's own line is unchanged, and this line of the change feeds its operand (a -inf
    # fill above an untouched softmax): the review comments here (analyzers/static/feeds.py)
    fed_by: int | None = None
    # the op is the whole body of a function applying it to its own parameter (`def
    # safe_sqrt(x): return jnp.sqrt(x)`): its callers choose the operand
    # (analyzers/static/wrappers.py)
    op_wrapper: bool = False

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = make_fingerprint(
                self.path, self.rule, self.op, self.call, self.function
            )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["interval"] = self.interval.to_json() if self.interval else None
        return data


def normalise_call(call: str) -> str:
    """Whitespace and line breaks must not change a fingerprint."""
    return "".join(call.split())


def make_fingerprint(
    path: str, rule: str, op: str, call: str, function: str, occurrence: int = 0
) -> str:
    """Stable across pushes that only move lines. `occurrence`: the same call text in the
    same function a second, third... time (counted from the top), so each copy keeps its
    own finding; the first copy's fingerprint is the plain one."""
    parts = (path, rule, op, normalise_call(call), function)
    text = "\x1f".join(parts + ((f"#{occurrence}",) if occurrence else ()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@dataclass
class StageError:
    """A failure that stopped part of a stage; everything else in the result still stands."""

    stage: str
    message: str
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AnalysisResult:
    repo: str
    base: str | None
    head: str | None
    config: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    errors: list[StageError] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    files_analyzed: int = 0
    lines_analyzed: int = 0
    tool_version: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool_version": self.tool_version,
            "repo": self.repo,
            "base": self.base,
            "head": self.head,
            "config": self.config,
            "findings": [f.to_json() for f in self.findings],
            "errors": [e.to_json() for e in self.errors],
            "timings": self.timings,
            "files_analyzed": self.files_analyzed,
            "lines_analyzed": self.lines_analyzed,
        }
