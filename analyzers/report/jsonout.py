"""The JSON format: AnalysisResult.to_json() as text, and back.

The harness inside the sandbox writes this text and the bot reads it, so both directions live
together; analyzers/schemas/analysis-result.schema.json describes the shape.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from analyzers.model import AnalysisResult, Finding, IntervalInfo, StageError
from analyzers.report.summary import sorted_findings

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "analysis-result.schema.json"


def json_safe(value: Any) -> Any:
    """Spell non-finite floats as strings anywhere in a structure.

    Triggers carry the very values that overflowed; strict JSON readers (GitHub, jq) reject the
    bare NaN/Infinity tokens Python would otherwise write.
    """
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "nan"
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def to_json_text(result: AnalysisResult) -> str:
    """Findings in source order so that two runs over the same code diff cleanly."""
    data = result.to_json()
    data["findings"] = [f.to_json() for f in sorted_findings(result.findings)]
    return json.dumps(json_safe(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def load_schema() -> dict[str, Any]:
    """The JSON Schema of to_json_text's output (shipped as package data)."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def _bound(value: float | int | str) -> float:
    """Inverse of the model's spelling of non-finite bounds: float() reads "inf", "-inf", "nan"."""
    if isinstance(value, str) and value not in ("inf", "-inf", "nan"):
        raise ValueError(f"interval bound {value!r} is neither a number nor inf/-inf/nan")
    return float(value)


def interval_from_json(data: dict[str, Any] | None) -> IntervalInfo | None:
    if data is None:
        return None
    return IntervalInfo(lo=_bound(data["lo"]), hi=_bound(data["hi"]), dtype=data["dtype"])


def finding_from_json(data: dict[str, Any]) -> Finding:
    """Rebuild a Finding; an unknown key raises TypeError rather than being dropped."""
    fields = dict(data)
    fields["interval"] = interval_from_json(fields.get("interval"))
    return Finding(**fields)


def result_from_json(data: dict[str, Any]) -> AnalysisResult:
    """Rebuild an AnalysisResult from the dict that to_json() produced."""
    version = data.get("schema_version")
    if version != 1:
        raise ValueError(f"unsupported AnalysisResult schema_version {version!r}")
    return AnalysisResult(
        repo=data["repo"],
        base=data["base"],
        head=data["head"],
        config=dict(data["config"]),
        findings=[finding_from_json(f) for f in data["findings"]],
        errors=[StageError(**e) for e in data["errors"]],
        timings={k: float(v) for k, v in data["timings"].items()},
        files_analyzed=int(data["files_analyzed"]),
        lines_analyzed=int(data["lines_analyzed"]),
        tool_version=data.get("tool_version", ""),
    )


def load_result(text: str) -> AnalysisResult:
    return result_from_json(json.loads(text))
