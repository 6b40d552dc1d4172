"""Facts about a result that every renderer states the same way.

Text, markdown and SARIF must agree on order and counts, or a CI log and the review it mirrors
would disagree; so the ordering and counting live here, once.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

from analyzers.catalogue import python_errors
from analyzers.dtypes import FLOAT32_VERDICTS, LOW_PRECISIONS, Float32Verdict
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


def validated_fix(finding: Finding) -> dict[str, Any] | None:
    """The fix, when the fix stage validated it (a fix dict without a status is taken as
    one, for hand-built results); None for none-validated, error, or no fix."""
    fix = finding.fix
    if not isinstance(fix, dict) or fix.get("status", "validated") != "validated":
        return None
    return fix


def fix_range(finding: Finding) -> tuple[int, int]:
    """The original lines the fix's replacement covers: its own start_line..end_line, else
    (hand-built results) the finding's line..end_line."""
    fix = finding.fix or {}
    start, end = fix.get("start_line"), fix.get("end_line")
    if isinstance(start, int) and isinstance(end, int) and 1 <= start <= end:
        return start, end
    return finding.line, max(finding.end_line, finding.line)


def anchor_lines(finding: Finding) -> tuple[int, int]:
    """Where a comment on the finding belongs: the added line that feeds an op on an
    unchanged line (`fed_by`), else the finding's own lines."""
    if finding.fed_by is not None:
        return finding.fed_by, finding.fed_by
    return finding.line, max(finding.end_line, finding.line)


def comment_range(finding: Finding) -> tuple[int, int]:
    """The lines a review comment on the finding should cover: the validated fix's range when
    a suggestion block can carry the whole fix (so the block replaces exactly the commented
    lines), else where the finding is anchored."""
    if suggestion_applies(finding) and finding.fed_by is None:
        return fix_range(finding)
    return anchor_lines(finding)


def suggestion_applies(finding: Finding) -> bool:
    """A validated fix whose replacement alone is the whole patch (no import added outside
    its range)."""
    fix = validated_fix(finding)
    return (
        fix is not None
        and fix.get("suggestion_complete", True) is not False
        and replacement_lines(finding) is not None
    )


def fix_diff(finding: Finding) -> str | None:
    fix = validated_fix(finding)
    diff = fix.get("diff") if fix else None
    return diff if isinstance(diff, str) and diff.strip() else None


def validation_summary(fix: dict[str, Any]) -> str:
    """One line on how a fix was checked: which checks ran and their figures."""
    validation = fix.get("validation")
    if not isinstance(validation, dict):
        return ""
    checks = validation.get("checks")
    if not isinstance(checks, list):  # a hand-built record: its items as they are
        return "; ".join(f"{k} = {v}" for k, v in sorted(validation.items()))
    said: list[str] = []
    for check in checks:
        if not isinstance(check, dict):
            continue
        name, ran, figures = check.get("name"), check.get("ran"), check.get("figures") or {}
        if name == "reproducer" and ran:
            said.append("the reproducer passes")
        elif name == "search":
            if ran:
                evaluations = sum(
                    int(r.get("evaluations") or 0)
                    for r in (figures.get("runs") or {}).values()
                    if isinstance(r, dict)
                )
                said.append(f"the search finds no trigger ({evaluations} runs)")
            else:
                said.append("no risky op left for the search")
        elif name == "static" and ran:
            said.append("the static pass no longer flags it")
        elif name == "equivalence" and ran:
            said.append(
                f"max deviation {_num(figures.get('max_abs'))} abs, "
                f"{_num(figures.get('max_rel'))} rel on "
                f"{figures.get('inputs', '?')} in-domain inputs"
            )
        elif name == "gradients" and ran:
            said.append(
                "gradients finite"
                + (" at the trigger and" if figures.get("trigger") else " on")
                + " normal inputs"
                + (
                    f" ({figures['inherited']} not finite before the patch either: another op's)"
                    if figures.get("inherited")
                    else ""
                )
            )
    return "; ".join(said)


def rejections(fix: dict[str, Any]) -> list[tuple[str, str]]:
    """(candidate, why rejected) for every candidate a none-validated fix tried."""
    out: list[tuple[str, str]] = []
    for record in fix.get("tried") or fix.get("rejected") or []:
        if isinstance(record, dict):
            label = f"{record.get('name', '?')} ({record.get('kind', '?')})"
            out.append((label, str(record.get("rejected_because") or "rejected")))
    return out


def _num(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, int | float) else str(value)


def replacement_lines(finding: Finding) -> list[str] | None:
    """The validated fix's replacement for its lines (`fix_range`), or None when there is
    none.

    The fix stage may store one string or a list of lines; renderers need lines.
    """
    fix = validated_fix(finding)
    if not fix:
        return None
    replacement = fix.get("replacement")
    if isinstance(replacement, str):
        return replacement.splitlines() or [""]
    if isinstance(replacement, list) and all(isinstance(x, str) for x in replacement):
        return list(replacement)
    return None


def _chosen_values(chosen: Any) -> str:
    """`, called with gamma=0.5 (numcheck's values)`: the parameters numcheck set itself,
    which the reader must judge as much as the box. Names that are not identifiers and values
    that are not numbers are left out (the record comes from the sandbox)."""
    if not isinstance(chosen, dict):
        return ""
    shown = [
        f"{name}={value!r}"
        for name, value in chosen.items()
        if isinstance(name, str) and name.isidentifier() and isinstance(value, bool | int | float)
    ][:6]
    return f", called with {', '.join(shown)} (numcheck's values)" if shown else ""


# What float32 made of a low-precision trigger's inputs (analyzers/dynamic/precision.py)
_FLOAT32_SAYS: dict[Float32Verdict, str] = {
    "finite": "the same inputs are finite in float32: a mixed-precision bug",
    "fails": "the same inputs fail in float32 too",
    "unreached": "in float32 the same inputs do not reach the op",
    "error": "in float32 the same inputs raise an error",
}


def precision_clause(trigger: dict[str, Any]) -> str:
    """`; under float16 autocast, and the same inputs are finite in float32: ...` for a
    trigger found in low precision, else "". Words not of numcheck's own are left out (the
    record comes from the sandbox)."""
    block = trigger.get("precision")
    if (
        not isinstance(block, dict)
        or block.get("dtype") not in LOW_PRECISIONS
        or block.get("float32") not in FLOAT32_VERDICTS
    ):
        return ""
    how = {
        "autocast": f"under {block['dtype']} autocast",
        "policy": f"under the mixed_{block['dtype']} policy",
    }.get(str(block.get("mode")), f"in {block['dtype']}")
    return f"; found {how}, and {_FLOAT32_SAYS[block['float32']]}"


def _recorded_held(box: dict[str, Any]) -> str:
    """The tests' own call that reached the op and stayed finite before this made-up call
    failed (runners/harness.py `recorded_held`): the reader weighs a trigger outside it."""
    held = box.get("recorded_held")
    if not isinstance(held, dict):
        return ""
    ranges = ", ".join(
        f"[{spec.get('lo'):g}, {spec.get('hi'):g}]"
        for spec in held.get("inputs", [])
        if isinstance(spec, dict)
    )
    return (
        f"; the repository's tests call it too, and searched from their values"
        f"{f' in {ranges}' if ranges else ''} ({held.get('evaluations')} runs) it stayed "
        "finite: this input lies outside what the tests pass"
    )


# What a proof on a call numcheck synthesised adds, by what the repository's tests told of
# the function (Harvest.tests_said); a value the sandbox sends outside these adds nothing.
TESTS_SAID = {
    "called": "",  # recorded calls were searched first (`recorded_held` says when they held)
    "no-call": "; numcheck made this call up: the repository's tests ran and never called it",
    "no-tests": "; numcheck made this call up: the repository has no tests to take values from",
    "not-run": "; numcheck made this call up: the repository's tests were not run",
}


def _made_up(box: dict[str, Any]) -> str:
    if box.get("source") != "synthesised":
        return ""
    said = box.get("tests")
    return TESTS_SAID.get(said, "") if isinstance(said, str) else ""


def _emptied(emptied: Any) -> str:
    """What a recorded call had emptied (analyzers/dynamic/emptied.py), in numcheck's words:
    the sandbox's block is believed only as a parameter name and one of two known ways."""
    if not isinstance(emptied, dict):
        return ""
    name, how = emptied.get("parameter"), emptied.get("how")
    if not (isinstance(name, str) and name.isidentifier()) or how not in ("whole", "elements"):
        return ""
    what = f"`{name}` empty" if how == "whole" else f"every element of `{name}` empty"
    return f"the tests' own call, with {what}"


def _empty(shape: Any) -> bool:
    """A box's shape with a dimension of 0: an empty batch (runners/harness._empty_trial)."""
    return isinstance(shape, list) and 0 in shape


def proof_sentence(finding: Finding) -> str:
    """What the dynamic pass did: the trigger it found, or the budget it spent."""
    trigger = finding.trigger or {}
    if "evaluations" not in trigger:
        return finding.error or "" if finding.status == "potential" else ""
    box = trigger.get("box") or {}
    inputs = "; ".join(
        (f"weight {spec['weight']} " if spec.get("weight") else "")
        + f"{spec.get('dtype')}{spec.get('shape')} in [{spec.get('lo'):g}, "
        f"{spec.get('hi'):g}]"
        + (" (empty)" if _empty(spec.get("shape")) else "")
        + (
            " (widened: the observed range held no trigger"
            + ("; kept on the side of 0 the tests showed)" if spec.get("keeps_sign") else ")")
            if spec.get("source") == "widened"
            else ""
        )
        + (
            " (sizes cut: at numcheck's default sizes no value moved the operand)"
            if spec.get("source") == "resized"
            else ""
        )
        for spec in box.get("inputs", [])
    )
    entry = f"{box.get('target', '?')} ({box.get('source', '?')} entry)" if box else ""
    inputs = (inputs or _emptied(box.get("emptied")) or "the box") + _chosen_values(
        box.get("chosen")
    )
    if finding.status == "confirmed":
        first = trigger.get("first_nonfinite") or {}
        origin = ""
        if first.get("line") is not None and (first.get("path"), first.get("line")) != (
            finding.path,
            finding.line,
        ):
            origin = (
                f"; the first NaN/Inf is made by {first.get('op')} at "
                f"{first.get('path')}:{first.get('line')}"
            )
        reach = (
            "" if trigger.get("reaches_output", True) else " (it does not reach the entry's output)"
        )
        steps = trigger.get("steps")
        if isinstance(steps, int) and steps > 1:  # a script run over training steps
            reach += f", at training step {steps}"
        failure = (
            f"{' or '.join(python_errors(finding.op))} raised by the line itself (Python "
            "numbers raise where tensors hold inf/NaN)"
            if trigger.get("shows") == "exception"
            else f"NaN/Inf in the {trigger.get('where')} pass"
        )
        return (
            f"{failure} after "
            f"{trigger.get('evaluations')} runs ({trigger.get('seconds', 0):.2f} s, stage "
            f"{trigger.get('stage')}) of {entry}, inputs in {inputs}"
            f"{reach}{origin}{precision_clause(trigger)}{_recorded_held(box)}{_made_up(box)}"
        )
    if finding.status == "not-triggered":
        low = trigger.get("low_precision")
        searched = [d for d in low if d in LOW_PRECISIONS] if isinstance(low, list) else []
        also = f", in float32 and in mixed {' and '.join(searched)}" if searched else ""
        return (
            f"no trigger in {trigger.get('evaluations')} runs "
            f"({trigger.get('seconds', 0):.2f} s) of {entry}, inputs in "
            f"{inputs}{also}" + (f"; {finding.error}" if finding.error else "")
        )
    if finding.status == "potential" and finding.error:
        return finding.error
    return ""
