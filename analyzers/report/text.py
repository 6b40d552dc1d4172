"""Terminal output in the compiler style editors and CI log viewers already link.

`path:line:col:` uses a 1-based column like gcc, ruff and mypy (the model's column is 0-based),
so that terminals and IDEs jump to the right character.
"""

from __future__ import annotations

import re
import textwrap

from analyzers.model import AnalysisResult, Finding, StageError
from analyzers.report.summary import (
    file_count,
    fix_diff,
    format_interval,
    plural,
    proof_sentence,
    rejections,
    replacement_lines,
    sorted_findings,
    status_counts,
    validated_fix,
    validation_summary,
)
from analyzers.trust import comment_on, held_back, held_back_sentence

_RESET = "\033[0m"
_BOLD = "\033[1m"
_DIM = "\033[2m"
_SEVERITY_COLOR = {"error": "\033[1;31m", "warning": "\033[1;33m", "note": "\033[1;36m"}
_STATUS_COLOR = {
    "confirmed": "\033[1;31m",
    "potential": "\033[33m",
    "not-triggered": "\033[32m",
    "error": "\033[35m",
}
_INDENT = "    "


class _Paint:
    """ANSI colours when asked for; identity otherwise, so both paths share one layout."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self.enabled and code else text


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _clean(text: str) -> str:
    """Repository text must not drive the terminal (escape sequences hidden in source)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _one_line(text: str) -> str:
    return _clean(" ".join(text.split()))


def _indented(label: str, text: str) -> list[str]:
    lines = _clean(textwrap.dedent(text).strip("\n")).splitlines() or [""]
    first = f"{_INDENT}{label}: {lines[0]}"
    pad = _INDENT + " " * (len(label) + 2)
    return [first, *(pad + line for line in lines[1:])]


def _finding_lines(finding: Finding, paint: _Paint) -> list[str]:
    location = paint(_BOLD, f"{_clean(finding.path)}:{finding.line}:{finding.column + 1}:")
    severity = paint(_SEVERITY_COLOR.get(finding.severity, ""), finding.severity)
    status = paint(_STATUS_COLOR.get(finding.status, ""), f"[{finding.status}]")
    lines = [f"{location} {severity} {_clean(finding.op)} {status} {_one_line(finding.why)}"]
    if finding.interval is not None:
        operand = _one_line(finding.operand) or "operand"
        lines.append(paint(_DIM, f"{_INDENT}{operand} in {format_interval(finding.interval)}"))
    if finding.status == "error" and finding.error:
        lines.extend(_indented("error", finding.error))
    proof = proof_sentence(finding)
    if proof and finding.reproducer:
        proof += "; the reproducer is in --format json or markdown"
    if proof:
        lines.extend(_indented(finding.status, proof))
    lines.extend(_fix_lines(finding))
    if validated_fix(finding) is None and finding.suggestion:
        lines.extend(_indented("suggestion", finding.suggestion))
    return lines


def _fix_lines(finding: Finding) -> list[str]:
    """The validated fix as its unified diff (its replacement lines when it has no diff);
    otherwise why there is none."""
    fix = validated_fix(finding)
    if fix is not None:
        head = f"{fix.get('kind', 'fix')}"
        if fix.get("description"):
            head += f": {_one_line(str(fix['description']))}"
        checked = validation_summary(fix)
        if checked:
            head += f" (checked: {checked})"
        diff = fix_diff(finding)
        replacement = replacement_lines(finding)
        if diff is not None:
            return _indented("fix", head + "\n" + diff)
        if replacement is not None:
            return _indented("fix", "\n".join(replacement))
        return _indented("fix", head)
    if not isinstance(finding.fix, dict):
        return []
    reason = str(finding.fix.get("reason") or "")
    if finding.fix.get("status") == "error":
        return _indented("fix", f"error: {_one_line(reason)}")
    tried = rejections(finding.fix)
    if not tried:
        return _indented("fix", f"none validated: {_one_line(reason or 'no candidate')}")
    return _indented(
        "fix",
        "none validated:\n" + "\n".join(f"{label}: {_one_line(why)[:300]}" for label, why in tried),
    )


def _summary_lines(result: AnalysisResult) -> list[str]:
    """The counts, then what a pull request would show inline and what it would hold back
    (the `comment_on` policy, analyzers/trust.py), so a run on a laptop tells the same story
    as the review."""
    findings = result.findings
    files = plural(file_count(result), "file")
    if findings:
        statuses = ", ".join(f"{n} {s}" for s, n in status_counts(findings))
        line = f"{plural(len(findings), 'finding')} ({statuses}) in {files}"
    else:
        line = f"no findings in {files}"
    if result.errors:
        line += f"; {plural(len(result.errors), 'error')}"
    lines = [line]
    policy = comment_on(result.config)
    sentence = held_back_sentence(findings, policy)
    if sentence:
        inline = len(findings) - len(held_back(findings, policy))
        lines.append(f"on a pull request: {plural(inline, 'inline comment')}; {sentence}")
        lines.extend(
            f"{_INDENT}held back: {_clean(f.path)}:{f.line} {_clean(f.op)} [{f.status}]"
            for f in sorted_findings(held_back(findings, policy))
        )
    return lines


def _error_line(error: StageError, paint: _Paint) -> str:
    where = f"{_clean(error.path)}: " if error.path else ""
    label = paint(_SEVERITY_COLOR["error"], f"error[{_clean(error.stage)}]")
    return f"{label} {where}{_one_line(error.message)}"


def render_text(result: AnalysisResult, color: bool = False) -> str:
    """Findings in source order, then the summary line, then stage errors in stage order."""
    paint = _Paint(color)
    lines: list[str] = []
    for finding in sorted_findings(result.findings):
        lines.extend(_finding_lines(finding, paint))
    summary = _summary_lines(result)
    lines.append(paint(_BOLD, summary[0]))
    lines.extend(summary[1:])
    errors = sorted(result.errors, key=lambda e: (e.stage, e.path or "", e.message))
    lines.extend(_error_line(e, paint) for e in errors)
    return "\n".join(lines) + "\n"
