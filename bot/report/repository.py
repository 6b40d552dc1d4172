"""What the repository page shows: analyses over time, findings by op and status, and how many
risks went away after numcheck suggested a validated fix.

"Fixed by a suggestion" is read from the analyses themselves: a finding (by fingerprint) that
some analysis of a pull request offered a validated fix for, and that the PR's latest analysis
no longer has, although it analysed the file (a file that failed to parse proves nothing).
Whether the author applied the suggestion block or wrote the same fix by hand cannot be told
apart, and the page says so.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup

from analyzers.report.summary import STATUS_ORDER, validated_fix
from bot.report.pages import Stored
from bot.report.svg import history_chart


@dataclass
class AnalysisRow:
    id: int
    pr_number: int
    head: str
    created: str
    status: str
    counts: dict[str, int]
    total: int
    url: str


@dataclass
class OpRow:
    op: str
    counts: dict[str, int]
    total: int


@dataclass
class RepositoryPage:
    repo: str
    title: str
    rows: list[AnalysisRow]  # newest first
    chart: Markup | None
    statuses: list[str]
    by_op: list[OpRow]
    pulls: int
    suggested: int
    fixed_by_suggestion: int
    resolved_otherwise: int
    still_open: int
    expires: str


def _date(value: datetime | None) -> str:
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def repository_page(
    repo: str, analyses: Sequence[Stored], *, link: Callable[[int], str], expires: int
) -> RepositoryPage:
    """`analyses` oldest first; `link(id)` is a signed link to one analysis's page."""
    rows: list[AnalysisRow] = []
    history: list[tuple[str, dict[str, int]]] = []
    by_pull: dict[int, list[Stored]] = defaultdict(list)
    for stored in analyses:
        findings = stored.result.findings if stored.result else []
        counts: dict[str, int] = dict(Counter(str(f.status) for f in findings))
        rows.append(
            AnalysisRow(
                stored.id,
                stored.pr_number,
                stored.head_sha[:12],
                _date(stored.created_at),
                stored.status,
                counts,
                len(findings),
                link(stored.id),
            )
        )
        if stored.result is not None:
            history.append(
                (
                    f"#{stored.pr_number} at {stored.head_sha[:7]}, {_date(stored.created_at)}",
                    counts,
                )
            )
            by_pull[stored.pr_number].append(stored)
    current: Counter[tuple[str, str]] = Counter()
    suggested = fixed = otherwise = still_open = 0
    for runs in by_pull.values():
        latest = runs[-1].result
        assert latest is not None
        now = {f.fingerprint for f in latest.findings}
        unread = {e.path for e in latest.errors if e.path}
        whole_stage_failed = any(e.path is None and e.stage == "static" for e in latest.errors)
        current.update((f.op, f.status) for f in latest.findings)
        still_open += len(now)
        offered: set[str] = set()
        paths: dict[str, str] = {}
        for stored in runs:
            for f in stored.result.findings if stored.result else []:
                paths[f.fingerprint] = f.path
                if validated_fix(f) is not None and f.fix is not None:
                    offered.add(f.fingerprint)
        suggested += len(offered)
        for fingerprint, path in paths.items():
            if fingerprint in now or path in unread or whole_stage_failed:
                continue
            if fingerprint in offered:
                fixed += 1
            else:
                otherwise += 1
    statuses = [s for s in STATUS_ORDER if any(s == st for _, st in current)]
    statuses += sorted({st for _, st in current} - set(statuses))
    ops: dict[str, dict[str, int]] = defaultdict(dict)
    for (op, status), n in current.items():
        ops[op][status] = n
    by_op = sorted(
        (OpRow(op, counts, sum(counts.values())) for op, counts in ops.items()),
        key=lambda row: (-row.total, row.op),
    )
    chart = history_chart(history)
    return RepositoryPage(
        repo=repo,
        title=f"numcheck report: {repo}",
        rows=rows[::-1],
        chart=Markup(chart) if chart else None,
        statuses=statuses,
        by_op=by_op,
        pulls=len(by_pull),
        suggested=suggested,
        fixed_by_suggestion=fixed,
        resolved_otherwise=otherwise,
        still_open=still_open,
        expires=datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
