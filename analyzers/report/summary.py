"""Facts about a result that every renderer states the same way.

Text, markdown and SARIF must agree on order and counts, or a CI log and the review it mirrors
would disagree; so the ordering and counting live here, once.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from analyzers.model import AnalysisResult, Finding, IntervalInfo

# Most decisive first: what a reader acts on comes before what merely might happen.
STATUS_ORDER: tuple[str, ...] = ("confirmed", "potential", "not-triggered", "error")
SEVERITY_RANK: dict[str, int] = {"error": 0, "warning": 1, "note": 2}


def finding_key(finding: Finding) -> tuple[str, int, int, int, int, str, str, str]:
    """Source order, then identity, so that equal locations still sort the same every run."""
    return (
        finding.path,
        finding.line,
        finding.column,
        finding.end_line,
        finding.end_column,
        finding.rule,
        finding.op,
        finding.fingerprint,
    )


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=finding_key)


def status_counts(findings: Iterable[Finding]) -> list[tuple[str, int]]:
    """Non-zero counts in STATUS_ORDER; unknown statuses follow, alphabetically."""
    counts: Counter[str] = Counter(f.status for f in findings)
    known = [(s, counts[s]) for s in STATUS_ORDER if counts[s]]
    extra = sorted((s, n) for s, n in counts.items() if s not in STATUS_ORDER)
    return known + extra


def op_counts(findings: Iterable[Finding]) -> list[tuple[str, int]]:
    """Most frequent op first, ties by name."""
    counts = Counter(f.op for f in findings)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def file_count(result: AnalysisResult) -> int:
    """Files analysed; never fewer than the files that have findings (hand-built results)."""
    return max(result.files_analyzed, len({f.path for f in result.findings}))


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_bound(value: float) -> str:
    """Short and exact enough to judge a range: 1e-07, 88.72, -inf."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def format_interval(interval: IntervalInfo) -> str:
    """Closed-interval notation with the dtype the bounds were computed in."""
    return f"[{format_bound(interval.lo)}, {format_bound(interval.hi)}] ({interval.dtype})"


def replacement_lines(finding: Finding) -> list[str] | None:
    """The fix's replacement for lines line..end_line, or None when the fix has none.

    The fix stage may store one string or a list of lines; renderers need lines.
    """
    if not finding.fix:
        return None
    replacement = finding.fix.get("replacement")
    if isinstance(replacement, str):
        return replacement.splitlines() or [""]
    if isinstance(replacement, list) and all(isinstance(x, str) for x in replacement):
        return list(replacement)
    return None


def proof_sentence(finding: Finding) -> str:
    """What the dynamic pass did: the trigger it found, or the budget it spent."""
    trigger = finding.trigger or {}
    if "evaluations" not in trigger:
        return finding.error or "" if finding.status == "potential" else ""
    box = trigger.get("box") or {}
    inputs = "; ".join(f"{spec.get('dtype')}{spec.get('shape')} in [{spec.get('lo'):g}, "
                       f"{spec.get('hi'):g}]" for spec in box.get("inputs", []))
    entry = f"{box.get('target', '?')} ({box.get('source', '?')} entry)" if box else ""
    if finding.status == "confirmed":
        first = trigger.get("first_nonfinite") or {}
        origin = ""
        if first.get("line") is not None and (first.get("path"), first.get("line")) != (
                finding.path, finding.line):
            origin = f"; the first NaN/Inf is made by {first.get('op')} at " \
                     f"{first.get('path')}:{first.get('line')}"
        reach = "" if trigger.get("reaches_output", True) else \
            " (it does not reach the entry's output)"
        return (f"NaN/Inf in the {trigger.get('where')} pass after "
                f"{trigger.get('evaluations')} runs ({trigger.get('seconds', 0):.2f} s, stage "
                f"{trigger.get('stage')}) of {entry}, inputs in {inputs or 'the box'}"
                f"{reach}{origin}")
    if finding.status == "not-triggered":
        return (f"no trigger in {trigger.get('evaluations')} runs "
                f"({trigger.get('seconds', 0):.2f} s) of {entry}, inputs in "
                f"{inputs or 'the box'}" + (f"; {finding.error}" if finding.error else ""))
    if finding.status == "potential" and finding.error:
        return finding.error
    return ""
