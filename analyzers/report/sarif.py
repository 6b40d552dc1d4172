"""SARIF 2.1.0, for GitHub code scanning and any other SARIF consumer.

Code scanning dedupes alerts across pushes by `partialFingerprints`, so the finding's own
fingerprint (which ignores line numbers) goes there; without it, moving code would reopen alerts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from importlib import metadata
from typing import Any
from urllib.parse import quote

from analyzers.model import AnalysisResult, Finding, StageError
from analyzers.report.jsonout import json_safe
from analyzers.report.summary import SEVERITY_RANK, format_interval, sorted_findings
from analyzers.static.rules import RuleText, rule_texts

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
TOOL_NAME = "numcheck"
INFORMATION_URI = "https://github.com/apps/numcheck"
FINGERPRINT_KEY = "numcheck/v1"
SRCROOT = "%SRCROOT%"


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
        rules.append(
            {
                "id": rule,
                "name": rule,
                "shortDescription": {"text": text.short},
                "fullDescription": {"text": text.full},
                "help": {"text": text.help},
                "defaultConfiguration": {"level": level},
                "properties": {"ops": sorted({f.op for f in members})},
            }
        )
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
    if finding.fix and finding.fix.get("status"):
        properties["fixStatus"] = finding.fix["status"]
    fixes = _fixes(finding)
    return {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": finding.severity,
        "message": {"text": _message(finding)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(finding.path), "uriBaseId": SRCROOT},
                    "region": _region(finding),
                },
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint},
        "properties": properties,
        **({"fixes": fixes} if fixes else {}),
    }


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff_replacements(diff: str) -> list[dict[str, Any]]:
    """SARIF replacements for a unified diff of one file: each run of removed and added lines
    becomes a deletedRegion of whole original lines (from column 1 of its first line to
    column 1 of the line after it) and the added text; a pure insertion deletes an empty
    region at the line it goes before."""
    out: list[dict[str, Any]] = []
    old_line = 0
    removed: list[str] = []
    added: list[str] = []
    start = 0

    def flush() -> None:
        if removed or added:
            region = {
                "startLine": start,
                "startColumn": 1,
                "endLine": start + len(removed),
                "endColumn": 1,
            }
            replacement: dict[str, Any] = {"deletedRegion": region}
            if added:
                replacement["insertedContent"] = {"text": "".join(added)}
            out.append(replacement)
        removed.clear()
        added.clear()

    for line in diff.splitlines(keepends=True):
        hunk = _HUNK.match(line)
        if hunk:
            flush()
            old_line = int(hunk.group(1)) if hunk.group(2) != "0" else int(hunk.group(1)) + 1
            continue
        if line.startswith(("---", "+++")) and not removed and not added and old_line == 0:
            continue
        if line.startswith("\\"):
            continue
        if line.startswith("-"):
            if not removed and not added:
                start = old_line
            removed.append(line[1:])
            old_line += 1
        elif line.startswith("+"):
            if not removed and not added:
                start = old_line
            added.append(line[1:] if line[1:].endswith("\n") else line[1:] + "\n")
        else:
            flush()
            old_line += 1
    flush()
    return out


def _fixes(finding: Finding) -> list[dict[str, Any]]:
    """A validated fix as SARIF `fixes` (artifactChanges with replacements)."""
    fix = finding.fix or {}
    diff = fix.get("diff")
    if fix.get("status", "validated") != "validated" or not isinstance(diff, str):
        return []
    replacements = diff_replacements(diff)
    if not replacements:
        return []
    text = str(fix.get("description") or fix.get("kind") or "numcheck fix")
    return [
        {
            "description": {"text": f"{text} (validated by numcheck)"},
            "artifactChanges": [
                {
                    "artifactLocation": {
                        "uri": _uri(str(fix.get("path") or finding.path)),
                        "uriBaseId": SRCROOT,
                    },
                    "replacements": replacements,
                }
            ],
        }
    ]


def _notification(error: StageError) -> dict[str, Any]:
    note: dict[str, Any] = {
        "level": "error",
        "message": {"text": f"{error.stage}: {error.message}"},
        "descriptor": {"id": f"stage/{error.stage}"},
        "properties": {"stage": error.stage},
    }
    if error.path:
        note["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(error.path), "uriBaseId": SRCROOT},
                },
            }
        ]
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
    run_properties = {
        "repo": result.repo,
        "base": result.base,
        "head": result.head,
        "timings": json_safe(result.timings),
    }
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": driver},
                "invocations": [_invocation(result)],
                "results": [_result(f, index[f.rule]) for f in findings],
                "columnKind": "unicodeCodePoints",
                "properties": run_properties,
            }
        ],
    }


def to_sarif_text(result: AnalysisResult, rule_text: Mapping[str, RuleText] | None = None) -> str:
    return (
        json.dumps(to_sarif(result, rule_text), indent=2, ensure_ascii=False, allow_nan=False)
        + "\n"
    )
