"""SARIF 2.1.0, for GitHub code scanning and any other SARIF consumer.

Code scanning dedupes alerts across pushes by `partialFingerprints`, so the finding's own
fingerprint (which ignores line numbers) goes there; without it, moving code would reopen alerts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any
from urllib.parse import quote

from analyzers.model import AnalysisResult, Finding, StageError
from analyzers.report.jsonout import json_safe
from analyzers.report.summary import SEVERITY_RANK, format_interval, sorted_findings

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
TOOL_NAME = "numcheck"
INFORMATION_URI = "https://github.com/apps/numcheck"
FINGERPRINT_KEY = "numcheck/v1"
SRCROOT = "%SRCROOT%"


@dataclass(frozen=True)
class RuleText:
    """Human text for one rule; the op catalogue may supply it, else it is derived."""

    short: str
    full: str
    help: str


def _installed_version() -> str | None:
    try:
        return metadata.version("numcheck")
    except metadata.PackageNotFoundError:
        return None


def _derived_rule_text(rule: str, findings: list[Finding]) -> RuleText:
    ops = sorted({f.op for f in findings})
    names = ", ".join(ops)
    return RuleText(
        short=f"{names} can produce NaN or Inf",
        full=(
            f"Rule {rule}: an operand of {names} can leave the operation's valid domain, "
            "so the forward or backward pass produces NaN or Inf."
        ),
        help=(
            "Keep the operand inside the valid domain: clamp it, add an epsilon, guard it "
            "with where(), or use the numerically stable API. Each result states the operand's "
            "interval and dtype; confirmed results carry a concrete input and a reproducer."
        ),
    )


def _rules(
    findings: list[Finding], rule_text: Mapping[str, RuleText]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One reportingDescriptor per rule present, sorted by id; returns them and their indices."""
    by_rule: dict[str, list[Finding]] = {}
    for finding in findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for rule in sorted(by_rule):
        members = by_rule[rule]
        text = rule_text.get(rule) or _derived_rule_text(rule, members)
        level = min((f.severity for f in members), key=lambda s: SEVERITY_RANK.get(s, 99))
        index[rule] = len(rules)
        rules.append({
            "id": rule,
            "name": rule,
            "shortDescription": {"text": text.short},
            "fullDescription": {"text": text.full},
            "help": {"text": text.help},
            "defaultConfiguration": {"level": level},
            "properties": {"ops": sorted({f.op for f in members})},
        })
    return rules, index


def _uri(path: str) -> str:
    """A relative URI reference: forward slashes, percent-encoded, never absolute."""
    return quote(path.replace("\\", "/").lstrip("/"), safe="/")


def _region(finding: Finding) -> dict[str, int]:
    """libcst columns are 0-based with an exclusive end; SARIF's are 1-based, end exclusive."""
    start_line = max(finding.line, 1)
    end_line = max(finding.end_line, start_line)
    start_column = max(finding.column, 0) + 1
    end_column = max(finding.end_column, 0) + 1
    if end_line == start_line:
        end_column = max(end_column, start_column)
    return {
        "startLine": start_line,
        "startColumn": start_column,
        "endLine": end_line,
        "endColumn": end_column,
    }


def _message(finding: Finding) -> str:
    text = finding.why.strip() or f"{finding.op} can produce NaN or Inf."
    if finding.status == "error" and finding.error:
        text += f" Analysis error: {finding.error}"
    if finding.suggestion:
        text += f" Suggestion: {finding.suggestion.strip()}"
    return text


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "op": finding.op,
        "framework": finding.framework,
        "status": finding.status,
        "function": finding.function,
        "interval": finding.interval.to_json() if finding.interval else None,
    }
    if finding.interval:
        properties["intervalText"] = format_interval(finding.interval)
    if finding.trigger:
        properties["trigger"] = json_safe(finding.trigger)
    if finding.fix and finding.fix.get("kind"):
        properties["fixKind"] = finding.fix["kind"]
    return {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": finding.severity,
        "message": {"text": _message(finding)},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(finding.path), "uriBaseId": SRCROOT},
                "region": _region(finding),
            },
        }],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint},
        "properties": properties,
    }


def _notification(error: StageError) -> dict[str, Any]:
    note: dict[str, Any] = {
        "level": "error",
        "message": {"text": f"{error.stage}: {error.message}"},
        "descriptor": {"id": f"stage/{error.stage}"},
        "properties": {"stage": error.stage},
    }
    if error.path:
        note["locations"] = [{
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(error.path), "uriBaseId": SRCROOT},
            },
        }]
    return note


def _invocation(result: AnalysisResult) -> dict[str, Any]:
    """A stage error without a path means the stage itself failed, so the run did not succeed."""
    invocation: dict[str, Any] = {
        "executionSuccessful": all(e.path is not None for e in result.errors),
    }
    if result.errors:
        invocation["toolExecutionNotifications"] = [_notification(e) for e in result.errors]
    return invocation


def to_sarif(
    result: AnalysisResult, rule_text: Mapping[str, RuleText] | None = None
) -> dict[str, Any]:
    """The SARIF log as a dict (one run)."""
    if rule_text is None:
        from analyzers.static.rules import rule_texts  # the registry imports RuleText from here

        rule_text = rule_texts()
    findings = sorted_findings(result.findings)
    rules, index = _rules(findings, rule_text)
    driver: dict[str, Any] = {
        "name": TOOL_NAME,
        "informationUri": INFORMATION_URI,
        "rules": rules,
    }
    version = result.tool_version or _installed_version()
    if version:
        driver["version"] = version
    run_properties = {"repo": result.repo, "base": result.base, "head": result.head,
                      "timings": json_safe(result.timings)}
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": driver},
            "invocations": [_invocation(result)],
            "results": [_result(f, index[f.rule]) for f in findings],
            "columnKind": "unicodeCodePoints",
            "properties": run_properties,
        }],
    }


def to_sarif_text(
    result: AnalysisResult, rule_text: Mapping[str, RuleText] | None = None
) -> str:
    return json.dumps(to_sarif(result, rule_text), indent=2, ensure_ascii=False,
                      allow_nan=False) + "\n"
