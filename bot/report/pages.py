"""What the analysis page shows, computed from a stored analysis (no Flask, no database).

`analysis_page` turns an Analysis row's data into plain values the template lays out: the
findings grouped by file, each with its highlighted excerpt, reasoning, trigger, box, plots,
downloads and fix validation. Kept apart from the routes so the tests can check the content
without a server, and the routes stay about access.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup

from analyzers.model import AnalysisResult, Finding
from analyzers.report.summary import (
    format_interval,
    proof_sentence,
    rejections,
    sorted_findings,
    status_counts,
    validated_fix,
    validation_summary,
)
from bot.report import excerpts, finding_anchor
from bot.report.highlight import Line, excerpt_lines
from bot.report.svg import deviation_plot, fmt, search_plot

STATUS_TEXT = {
    "confirmed": "confirmed: a concrete input produced NaN/Inf",
    "potential": "potential: flagged by the static pass, not run",
    "not-triggered": "not triggered: the search found no failing input in its budget",
    "error": "error: the analysis of this finding failed",
}
FIX_STATUS_TEXT = {
    "validated": "a validated fix",
    "none-validated": "no candidate fix passed validation",
    "error": "the fix stage failed",
}
VALUES_SHOWN = 24


@dataclass(frozen=True)
class Stored:
    """An analysis as the page needs it, read out of the database session."""

    id: int
    repo: str
    pr_number: int
    head_sha: str
    base_sha: str
    status: str
    error: str
    created_at: datetime | None
    timings: Mapping[str, Any]
    result: AnalysisResult | None
    excerpts: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class CheckView:
    name: str
    outcome: str  # passed | failed | not run
    figures: str
    reason: str


@dataclass
class FindingView:
    anchor: str
    finding: Finding
    status_text: str
    lines: list[Line]
    excerpt_partial: bool
    interval: str | None
    proof: str
    trigger_rows: list[tuple[str, str]]
    inputs: list[dict[str, str]]
    box: list[dict[str, str]]
    box_entry: str
    search_svg: Markup | None
    deviation_svg: Markup | None
    reproducer_url: str | None
    patch_url: str | None
    fix_status: str | None
    fix_text: str
    fix: dict[str, Any] | None
    diff_lines: list[tuple[str, str]]
    checks: list[CheckView]
    rejected: list[tuple[str, str]]


@dataclass
class FileView:
    path: str
    anchor: str
    findings: list[FindingView]


@dataclass
class AnalysisPage:
    stored: Stored
    title: str
    counts: list[tuple[str, int]]
    timings: list[tuple[str, str]]
    errors: list[tuple[str, str, str]]
    files: list[FileView]
    pull_url: str | None
    repository_url: str | None
    expires: str


def inline_code(text: str) -> Markup:
    """Plain text whose `backticked` spans become <code>, as the static pass writes them."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: leave the text alone
        return Markup.escape(text)
    return Markup("").join(
        Markup("<code>{}</code>").format(part) if i % 2 else Markup.escape(part)
        for i, part in enumerate(parts)
    )


def anchor(finding: Finding) -> str:
    """The id of a finding's section: what review comments link to."""
    return finding_anchor(finding.fingerprint)


def _values(summary: Mapping[str, Any]) -> str:
    """A trigger input in a line: its values (the first few) or its range."""
    if "values" in summary:
        flat = list(_flatten(summary["values"]))
        shown = ", ".join(_num(v) for v in flat[:VALUES_SHOWN])
        more = f", … ({len(flat)} values)" if len(flat) > VALUES_SHOWN else ""
        return f"[{shown}{more}]"
    if "min" in summary or "max" in summary:
        return f"min {_num(summary.get('min'))}, max {_num(summary.get('max'))}"
    return ""


def _flatten(value: Any) -> Any:
    if isinstance(value, list | tuple):
        for item in value:
            yield from _flatten(item)
    else:
        yield value


def _num(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return fmt(value) if math.isfinite(value) else str(value)
    return str(value)


def _shape(value: Any) -> str:
    return "[" + ", ".join(str(d) for d in value) + "]" if isinstance(value, list) else str(value)


def _trigger_rows(trigger: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    labels = (
        ("where", "NaN/Inf in the"),
        ("stage", "found by the stage"),
        ("evaluations", "evaluations"),
        ("seconds", "seconds"),
        ("best_loss", "closest objective value"),
        ("device", "device"),
        ("seed", "seed"),
        ("reaches_output", "reaches the entry's output"),
        ("shows", "the reproducer sees it in"),
    )
    for key, label in labels:
        value = trigger.get(key)
        if value is not None and value != "":
            rows.append((label, _num(value)))
    first = trigger.get("first_nonfinite")
    if isinstance(first, dict) and first.get("op"):
        where = f"{first.get('path')}:{first.get('line')}" if first.get("line") else "?"
        node = f", autograd node {first['node']}" if first.get("node") else ""
        rows.append(("first NaN/Inf made by", f"{first.get('op')} at {where}{node}"))
    return rows


def _figures(figures: Mapping[str, Any]) -> str:
    """A check's scalar figures in a line; series and nested runs are summarised."""
    said: list[str] = []
    for key, value in figures.items():
        if key == "per_input" and isinstance(value, list):
            said.append(f"per input: {len(value)} plotted below")
        elif key == "runs" and isinstance(value, dict):
            for op, run in value.items():
                if isinstance(run, dict):
                    said.append(
                        f"{op}: {run.get('evaluations', '?')} evaluations, "
                        f"{'triggered' if run.get('triggered') else 'no trigger'}"
                    )
        elif isinstance(value, bool | int | float | str):
            said.append(f"{key} = {_num(value)}")
        elif isinstance(value, list) and all(isinstance(v, int | float | str) for v in value):
            said.append(f"{key} = {', '.join(_num(v) for v in value) or 'none'}")
    return "; ".join(said)


def _checks(fix: Mapping[str, Any]) -> list[CheckView]:
    validation = fix.get("validation")
    checks = validation.get("checks") if isinstance(validation, dict) else None
    out: list[CheckView] = []
    for check in checks if isinstance(checks, list) else []:
        if not isinstance(check, dict):
            continue
        outcome = (
            "not run" if not check.get("ran") else ("passed" if check.get("passed") else "failed")
        )
        out.append(
            CheckView(
                str(check.get("name", "?")),
                outcome,
                _figures(check.get("figures") or {}),
                str(check.get("reason") or ""),
            )
        )
    return out


def _equivalence(fix: Mapping[str, Any]) -> Mapping[str, Any] | None:
    validation = fix.get("validation")
    for check in (validation or {}).get("checks") or [] if isinstance(validation, dict) else []:
        if isinstance(check, dict) and check.get("name") == "equivalence":
            figures = check.get("figures")
            return figures if isinstance(figures, dict) else None
    return None


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    out = []
    for text in diff.splitlines():
        if text.startswith(("+++", "---")):
            css = "diff-file"
        elif text.startswith("@@"):
            css = "diff-hunk"
        elif text.startswith("+"):
            css = "diff-add"
        elif text.startswith("-"):
            css = "diff-del"
        else:
            css = ""
        out.append((css, text))
    return out


def finding_view(
    finding: Finding, kept: Mapping[str, Any] | None, link: Callable[[str], str]
) -> FindingView:
    """Everything the page says about one finding; `link(suffix)` signs a download path."""
    source = kept if kept and isinstance(kept.get("lines"), list) else excerpts.fallback(finding)
    end = max(finding.end_line, finding.line)
    lines = excerpt_lines(
        [str(t) for t in source["lines"]],
        int(source["start"]),
        (finding.line, end),
        (finding.line, finding.column, end, finding.end_column),
    )
    trigger = finding.trigger or {}
    box_value = trigger.get("box")
    box: dict[str, Any] = box_value if isinstance(box_value, dict) else {}
    box_rows = [
        {
            "input": str(
                spec.get("site")
                or (f"weight {spec['weight']}" if spec.get("weight") else f"input {i}")
            ),
            "dtype": str(spec.get("dtype", "")),
            "shape": _shape(spec.get("shape")),
            "range": f"[{_num(spec.get('lo'))}, {_num(spec.get('hi'))}]",
            "source": str(spec.get("source", "")),
        }
        for i, spec in enumerate(box.get("inputs") or [], 1)
        if isinstance(spec, dict)
    ]
    inputs = [
        {
            "input": f"input {i}",
            "dtype": str(s.get("dtype", "")),
            "shape": _shape(s.get("shape")),
            "shown": _values(s),
        }
        for i, s in enumerate(trigger.get("inputs") or [], 1)
        if isinstance(s, dict)
    ]
    trace = trigger.get("search_trace")
    search_svg = (
        search_plot(trace, op=finding.op, where=str(trigger.get("where") or "search"))
        if isinstance(trace, dict)
        else None
    )
    fix = finding.fix if isinstance(finding.fix, dict) else None
    valid = validated_fix(finding) if fix is not None else None
    equivalence = _equivalence(valid) if valid else None
    deviation_svg = deviation_plot(dict(equivalence)) if equivalence else None
    diff = valid.get("diff") if valid else None
    return FindingView(
        anchor=anchor(finding),
        finding=finding,
        status_text=STATUS_TEXT.get(finding.status, finding.status),
        lines=lines,
        excerpt_partial=bool(source.get("partial")),
        interval=format_interval(finding.interval) if finding.interval else None,
        proof=proof_sentence(finding),
        trigger_rows=_trigger_rows(trigger) if trigger else [],
        inputs=inputs,
        box=box_rows,
        box_entry=f"{box.get('target', '?')} ({box.get('source', '?')} entry)" if box else "",
        search_svg=Markup(search_svg) if search_svg else None,
        deviation_svg=Markup(deviation_svg) if deviation_svg else None,
        reproducer_url=link(f"{finding.fingerprint}/reproducer.py") if finding.reproducer else None,
        patch_url=link(f"{finding.fingerprint}/fix.diff")
        if isinstance(diff, str) and diff.strip()
        else None,
        fix_status=FIX_STATUS_TEXT.get(str(fix.get("status", "validated")))
        if fix is not None
        else None,
        fix_text=validation_summary(valid) if valid else "",
        fix=valid,
        diff_lines=_diff_lines(diff) if isinstance(diff, str) else [],
        checks=_checks(valid) if valid else [],
        rejected=rejections(fix) if fix is not None and valid is None else [],
    )


def analysis_page(
    stored: Stored,
    *,
    link: Callable[[str], str],
    expires: int,
    repository_url: str | None,
    web_url: str | None,
) -> AnalysisPage:
    """The whole page; `link(suffix)` gives a signed URL below the analysis."""
    result = stored.result
    findings = sorted_findings(result.findings) if result else []
    files: dict[str, FileView] = {}
    for finding in findings:
        view = files.setdefault(finding.path, FileView(finding.path, f"file-{len(files) + 1}", []))
        view.findings.append(finding_view(finding, stored.excerpts.get(finding.fingerprint), link))
    timings = dict(stored.timings or {})
    for key, value in (result.timings if result else {}).items():
        timings.setdefault(f"analysis_{key}", value)
    return AnalysisPage(
        stored=stored,
        title=f"numcheck report: {stored.repo} #{stored.pr_number}",
        counts=status_counts(findings),
        timings=[
            (str(k).replace("_", " "), f"{float(v):.3f}")
            for k, v in timings.items()
            if isinstance(v, int | float)
        ],
        errors=[(e.stage, e.path or "", e.message) for e in (result.errors if result else [])],
        files=list(files.values()),
        pull_url=f"{web_url}/{stored.repo}/pull/{stored.pr_number}" if web_url else None,
        repository_url=repository_url,
        expires=datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
