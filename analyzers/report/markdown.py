"""The review the App posts on a pull request, as GitHub-flavoured markdown.

The CLI's `--format markdown` prints exactly these strings, so a user sees on a laptop what the
App would post. GitHub refuses comment bodies over 65535 characters: every function here stays
under that, cutting the least important text first.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from analyzers.model import AnalysisResult, Finding, StageError
from analyzers.report.jsonout import json_safe
from analyzers.report.mdescape import (
    code_span,
    comment_safe,
    escape_text,
    fenced,
    inline_markdown,
    one_line,
    table_cell,
    truncate,
)
from analyzers.report.summary import (
    anchor_lines,
    comment_range,
    file_count,
    fix_diff,
    fix_range,
    format_bound,
    op_counts,
    plural,
    proof_sentence,
    rejections,
    replacement_lines,
    sorted_findings,
    status_counts,
    suggestion_applies,
    validated_fix,
    validation_summary,
)
from analyzers.trust import (
    cancels_guard,
    comment_inline,
    comment_on,
    held_back_sentence,
    proves_a_tests_helper,
    proves_only_the_op,
    rests_on_constants,
)

GITHUB_BODY_LIMIT = 65535
# Room kept free below GitHub's limit: the bot may append a line or two (links, footers).
BODY_BUDGET = GITHUB_BODY_LIMIT - 1535
REVIEW_MARKER = "<!-- numcheck:review -->"

# Caps for repository-controlled one-liners, so only the reproducer ever needs real truncation.
_CALL_CAP = 300
_WHY_CAP = 2000
_CELL_WHY_CAP = 300
_ERROR_CAP = 1000
_TRIGGER_CAP = 6000
_DIFF_CAP = 20000
_SUGGESTION_CAP = 30000

_STATUS_HEADLINE = {
    "confirmed": "confirmed: a concrete input produced NaN/Inf",
    "potential": "potential NaN/Inf",
    "not-triggered": "potential NaN/Inf, not triggered by the search",
    "error": "analysis error",
}


def fingerprint_marker(finding: Finding) -> str:
    """Hidden in every inline comment so that a re-push edits instead of duplicating."""
    return f"<!-- numcheck:fingerprint={comment_safe(finding.fingerprint)} -->"


def _details(summary: str, body: str) -> str:
    # The blank lines let GitHub render markdown inside the HTML block.
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def _headline(finding: Finding) -> str:
    status = _STATUS_HEADLINE.get(finding.status, escape_text(finding.status))
    return f"**numcheck · {code_span(finding.op)} · {status}**"


def _operand_line(finding: Finding) -> str | None:
    operand = code_span(truncate(finding.operand, _CALL_CAP)) if finding.operand.strip() else ""
    if finding.interval is None:
        return f"Operand: {operand}" if operand else None
    subject = f"Operand {operand}" if operand else "Operand"
    interval = finding.interval
    bounds = code_span(f"[{format_bound(interval.lo)}, {format_bound(interval.hi)}]")
    return f"{subject} ∈ {bounds} ({escape_text(interval.dtype)})"


def _suggestion_section(finding: Finding, commented: tuple[int, int]) -> str | None:
    """A suggestion block only for a validated replacement that is the whole patch and covers
    exactly the commented lines; a validated patch that does not fit one is shown as its diff;
    otherwise plain text the user can copy."""
    fix = validated_fix(finding)
    lines = replacement_lines(finding)
    if fix is not None:
        kind = fix.get("kind")
        title = f"Suggested fix ({escape_text(str(kind))})" if kind else "Suggested fix"
        description = fix.get("description")
        if isinstance(description, str) and description.strip():
            title += f": {escape_text(truncate(one_line(description), 300))}"
        checked = escape_text(truncate(validation_summary(fix), 500))
        head = f"{title}{'. Checked: ' + checked if checked else ''}."
        if lines is not None and suggestion_applies(finding) and fix_range(finding) == commented:
            block = fenced("\n".join(lines), "suggestion")
            if len(block) > _SUGGESTION_CAP:
                # Half a suggestion would be applied as if whole: say so instead of cutting it.
                return (
                    f"{head} The replacement ({plural(len(lines), 'line')}) is too long to "
                    "show here; `numcheck review --format json` prints it."
                )
            return f"{head}\n\n{block}"
        diff = fix_diff(finding)
        if diff is not None:
            start, end = fix_range(finding)
            why = (
                "it also adds an import"
                if fix.get("suggestion_complete") is False
                else f"it covers lines {start}-{end}"
            )
            note = f"{head} As a patch ({why}; `numcheck review --fix` applies it):"
            return f"{note}\n\n{fenced(truncate(diff, _DIFF_CAP), 'diff')}"
    if finding.suggestion:
        suggestion = truncate(finding.suggestion.strip(), _SUGGESTION_CAP)
        if "\n" in suggestion:
            return f"Consider:\n\n{fenced(suggestion, 'python')}"
        return f"Consider: {code_span(suggestion)}"
    return None


def _no_fix_section(finding: Finding) -> str | None:
    """Why no checked fix is suggested: every candidate's rejection, or the stage's error."""
    fix = finding.fix
    if not isinstance(fix, dict) or validated_fix(finding) is not None:
        return None
    status = fix.get("status")
    reason = str(fix.get("reason") or "")
    if status == "error":
        return f"Fix stage error: {escape_text(truncate(one_line(reason), _ERROR_CAP))}"
    tried = rejections(fix)
    if not tried:
        return f"No checked fix: {escape_text(truncate(one_line(reason or 'no candidate'), 500))}."
    items = "\n".join(
        f"- {escape_text(one_line(label))}: {escape_text(truncate(one_line(why), 500))}"
        for label, why in tried
    )
    return _details(
        f"No checked fix: {plural(len(tried), 'candidate')} tried, none passed",
        truncate(items, _TRIGGER_CAP),
    )


def _proof_paragraph(finding: Finding) -> str | None:
    """What the dynamic pass found, with the box the inputs came from."""
    sentence = proof_sentence(finding)
    if not sentence or finding.status not in ("confirmed", "not-triggered"):
        return None
    label = "Proof" if finding.status == "confirmed" else "Search"
    return f"**{label}:** {escape_text(sentence)}"


def _trigger_section(finding: Finding) -> str | None:
    if not finding.trigger:
        return None
    # the search's plot data is drawn on the report page; in a comment it would crowd out
    # the values a reader needs
    shown = {k: v for k, v in finding.trigger.items() if k != "search_trace"}
    text = json.dumps(json_safe(shown), indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return _details("Trigger", fenced(truncate(text, _TRIGGER_CAP), "json"))


def _reproducer_section(reproducer: str, budget: int) -> str | None:
    """The reproducer, cut to `budget` characters of markdown with a note when it does not fit."""
    full = _details("Reproducer", fenced(reproducer, "python"))
    if len(full) <= budget:
        return full
    overhead = len(_details("Reproducer", fenced("", "python"))) + 200
    keep = budget - overhead
    if keep <= 0:
        return None
    cut = reproducer[:keep]
    cut = cut[: cut.rfind("\n") + 1] or cut  # end on a whole line where possible
    note = (
        f"_Reproducer truncated: {len(reproducer) - len(cut)} of {len(reproducer)} characters "
        "not shown; `numcheck review --format json` prints it in full._"
    )
    return _details("Reproducer (truncated)", f"{fenced(cut, 'python')}\n\n{note}")


def inline_comment(finding: Finding, commented: tuple[int, int] | None = None) -> str:
    """One review comment for one finding, under GitHub's body limit. `commented`: the lines
    the comment covers (default: the finding's own); a suggestion block is shown only when
    it replaces exactly those lines (`comment_range` says which lines that takes)."""
    if commented is None:
        commented = anchor_lines(finding)
    parts = [_headline(finding), inline_markdown(truncate(finding.why, _WHY_CAP))]
    operand = _operand_line(finding)
    if operand:
        parts.append(operand)
    if finding.status == "error" and finding.error:
        parts.append(f"Error: {escape_text(truncate(one_line(finding.error), _ERROR_CAP))}")
    proof = _proof_paragraph(finding)
    if proof:
        parts.append(proof)
    for section in (
        _suggestion_section(finding, commented),
        _no_fix_section(finding),
        _trigger_section(finding),
    ):
        if section:
            parts.append(section)
    marker = fingerprint_marker(finding)
    used = sum(len(p) + 2 for p in parts) + len(marker)
    if finding.reproducer:
        reproducer = _reproducer_section(finding.reproducer, BODY_BUDGET - used - 2)
        if reproducer:
            parts.append(reproducer)
    parts.append(marker)
    return _cap("\n\n".join(parts), marker)


def _cap(body: str, tail: str) -> str:
    """Last resort (huge suggestion blocks): cut, but keep the closing marker."""
    if len(body) <= BODY_BUDGET:
        return body
    note = "\n\n_Comment truncated to fit GitHub's limit._\n\n"
    return body[: BODY_BUDGET - len(note) - len(tail)] + note + tail


def _counts_line(result: AnalysisResult) -> str:
    findings = result.findings
    statuses = ", ".join(f"{n} {s}" for s, n in status_counts(findings))
    head = f"**{plural(len(findings), 'finding')}** ({statuses})"
    files = plural(file_count(result), "file")
    ops = ", ".join(f"{code_span(op)} × {n}" for op, n in op_counts(findings))
    return f"{head} in {files}. By op: {ops}."


def _findings_table(findings: list[Finding], budget: int) -> str:
    header = "| Location | Op | Status | Call | Why |\n| --- | --- | --- | --- | --- |"
    rows: list[str] = []
    used = len(header)
    for index, f in enumerate(findings):
        cells = [
            code_span(f"{f.path}:{f.line}"),
            code_span(f.op),
            escape_text(f.status),
            code_span(truncate(f.call, _CALL_CAP)),
            inline_markdown(truncate(f.why, _CELL_WHY_CAP)),
        ]
        row = "| " + " | ".join(table_cell(c) for c in cells) + " |"
        if used + len(row) + 1 > budget:
            rest = len(findings) - index
            rows.append(f"\n_… and {plural(rest, 'more finding')} not shown._")
            break
        rows.append(row)
        used += len(row) + 1
    return "\n".join([header, *rows])


def _errors_section(errors: list[StageError], budget: int) -> str:
    stages: dict[str, list[StageError]] = {}
    for error in errors:
        stages.setdefault(error.stage, []).append(error)
    lines: list[str] = []
    for stage in sorted(stages):
        lines.append(f"**{escape_text(stage)}**\n")
        for error in stages[stage]:
            where = f"{code_span(error.path)}: " if error.path else "whole stage: "
            message = escape_text(truncate(one_line(error.message), _ERROR_CAP))
            lines.append(f"- {where}{message}")
        lines.append("")
    body = "\n".join(lines).strip()
    body = truncate(body, max(budget - 200, 0))
    names = ", ".join(escape_text(s) for s in sorted(stages))
    return _details(f"{plural(len(errors), 'error')} ({names})", body)


_NOTES_CAP = 6000


def settings_notes(result: AnalysisResult) -> str | None:
    """What the App ignored or lowered in the repository's settings (`Config.notes`, from
    analyzers/policy.py), as a list; None when it used them as written. The notes quote
    values the pull request wrote, so everything outside their code spans is escaped."""
    notes = [str(n) for n in result.config.get("notes") or () if str(n).strip()]
    if not notes:
        return None
    items = "\n".join(
        f"- {inline_markdown(truncate(note, _NOTES_CAP // len(notes)))}" for note in notes
    )
    return f"**Settings.**\n\n{items}"


def review_body(result: AnalysisResult, inline: Collection[str] = frozenset()) -> str:
    """The review's summary; findings whose fingerprint is in `inline` are left to their comment.

    The bot passes the fingerprints it could place on changed lines; the other findings that
    the publishing policy (`comment_on`, analyzers/trust.py) lets be inline are listed here, so
    that nothing is lost to the comment cap. Findings the policy holds back are counted, with
    why, and listed in a collapsed section.
    """
    findings = sorted_findings(result.findings)
    policy = comment_on(result.config)
    parts = ["## numcheck"]
    if findings:
        parts.append(_counts_line(result))
    else:
        files = plural(file_count(result), "file")
        parts.append(f"No NaN/Inf risks found in the changed code ({files} analysed).")
    notes = settings_notes(result)
    if notes:
        parts.append(notes)
    shown = [f for f in findings if comment_inline(f, policy)]
    kept = [f for f in findings if not comment_inline(f, policy)]
    remaining = [f for f in shown if f.fingerprint not in inline]
    sentence = held_back_sentence(findings, policy)
    if sentence:
        parts.append(
            escape_text(sentence) + " They are notice annotations on the check run; "
            '`comment_on = "potential"` comments on every finding.'
        )
    errors_reserve = 8000 if result.errors else 0
    held_reserve = min(12000, 400 * len(kept)) if kept else 0
    if remaining:
        used = sum(len(p) + 2 for p in parts) + len(REVIEW_MARKER) + errors_reserve + held_reserve
        title = "Findings" if not inline else "Findings not commented inline"
        parts.append(f"### {title}\n\n{_findings_table(remaining, BODY_BUDGET - used - 40)}")
    if kept:
        used = sum(len(p) + 2 for p in parts) + len(REVIEW_MARKER) + errors_reserve
        table = _findings_table(kept, BODY_BUDGET - used - 200)
        why = "not proven" + "".join(
            f", or proven only {how}"
            for test, how in (
                (cancels_guard, "by cancelling an epsilon"),
                (proves_only_the_op, "where a wrapper's callers choose the operand"),
                (rests_on_constants, "with constants the code is handed set by numcheck"),
                (proves_a_tests_helper, "on a test file's function called with made-up inputs"),
            )
            if any(map(test, kept))
        )
        parts.append(_details(f"{plural(len(kept), 'finding')} held back ({why})", table))
    if result.errors:
        parts.append(_errors_section(result.errors, errors_reserve))
    parts.append(REVIEW_MARKER)
    return "\n\n".join(parts)


def render_markdown(result: AnalysisResult) -> str:
    """The CLI's markdown: the review body, then every comment the App would post inline
    (under the `comment_on` policy), each under its location."""
    parts = [review_body(result)]
    policy = comment_on(result.config)
    for finding in sorted_findings(result.findings):
        if not comment_inline(finding, policy):
            continue
        start, end = comment_range(finding)
        where = f"{start}" if start == end else f"{start}-{end}"
        heading = f"### {escape_text(one_line(finding.path))}:{where}"
        parts.append(f"{heading}\n\n{inline_comment(finding, (start, end))}")
    return "\n\n".join(parts) + "\n"
