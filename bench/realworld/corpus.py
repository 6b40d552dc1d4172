"""The bug list, the hand judgements, and scoring one reviewed pull request against its bug.

No numcheck run happens here (that is `review.py`), so the scoring can be tested on results
written by hand.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from analyzers.model import Finding
from analyzers.trust import comment_inline, is_definite

HERE = Path(__file__).parent
BUGS = HERE / "bugs.tsv"
JUDGEMENTS = HERE / "judgements.tsv"
UNPROVEN = HERE / "unproven.tsv"
BUG_COLUMNS = (
    "id",
    "repo",
    "framework",
    "fix_commit",
    "intro_commit",
    "path",
    "line",
    "op",
    "excerpt",
    "summary",
)
JUDGEMENT_COLUMNS = ("bug", "path", "line", "op", "rule", "judgement", "note")
VERDICTS = ("real", "borderline", "noise")
UNPROVEN_COLUMNS = ("bug", "cause", "note")
# Why a bug was not proven, read by hand from its row (unproven.tsv), so that the proven figure
# says what would move it:
#   static-miss    the static pass does not flag the bug's line;
#   old-framework  the introducing commit's code needs an older Python, framework or library
#                  than the one installed (an API since removed, a version assert), so it
#                  cannot run as it ran when the pull request was opened;
#   environment    a dependency this machine cannot have: a compiled extension without a
#                  wheel, a package that does not install, a pretrained model to download;
#   numcheck       the code runs, and numcheck does not build a call that reaches the op or
#                  does not search it well: numcheck's own limit, to be fixed;
#   budget         the review or the sandboxed run passed its time limit;
#   not-here       searched and not triggered, and the bug does not show where numcheck ran
#                  it (another backend or device);
#   upstream       the NaN/Inf is made, and proven, at an earlier line whose result the bug's
#                  op reads: at the bug's line the op only passes it on (the fix guarded the
#                  later op).
CAUSES = (
    "static-miss",
    "old-framework",
    "environment",
    "numcheck",
    "budget",
    "not-here",
    "upstream",
)
# The bug list names the failure; a finding names the op (and a pattern rule). These are the
# same bug: `log-softmax` is a `log` finding of rule log-softmax, `norm` a division by one.
OP_ALIASES: dict[str, frozenset[str]] = {
    "log-softmax": frozenset({"log", "log-softmax", "log_softmax", "softmax"}),
    "log-sigmoid": frozenset({"log", "log-sigmoid"}),
    "bce-sigmoid": frozenset({"binary_cross_entropy", "bce-sigmoid"}),
    "softmax": frozenset({"softmax", "masked-softmax-inf"}),
    "norm": frozenset({"norm", "div", "manual-normalize"}),
    "reciprocal": frozenset({"reciprocal", "div"}),
    "rsqrt": frozenset({"rsqrt", "sqrt"}),
}


@dataclass(frozen=True)
class Bug:
    id: str
    repo: str
    framework: str
    fix_commit: str
    intro_commit: str
    path: str
    line: int
    op: str
    excerpt: str
    summary: str

    def matches_op(self, finding: Finding) -> bool:
        names = OP_ALIASES.get(self.op, frozenset({self.op}))
        return finding.op in names or finding.rule in names


def _rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        if tuple(reader.fieldnames or ()) != columns:
            raise ValueError(f"{path}: the header must be {' '.join(columns)}")
        return [dict(row) for row in reader]


def load_bugs(path: Path = BUGS) -> list[Bug]:
    bugs = []
    for row in _rows(path, BUG_COLUMNS):
        bugs.append(Bug(**{**row, "line": int(row["line"])}))  # type: ignore[arg-type]
    ids = [b.id for b in bugs]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path}: duplicate ids")
    return bugs


JudgementKey = tuple[str, str, int, str]


def load_judgements(path: Path = JUDGEMENTS) -> dict[JudgementKey, str]:
    """(bug, path, line, op) -> real | borderline | noise."""
    if not path.exists():
        return {}
    out: dict[JudgementKey, str] = {}
    for row in _rows(path, JUDGEMENT_COLUMNS):
        if row["judgement"] not in VERDICTS:
            raise ValueError(f"{path}: judgement must be one of {VERDICTS}: {row}")
        out[(row["bug"], row["path"], int(row["line"]), row["op"])] = row["judgement"]
    return out


def load_unproven(path: Path = UNPROVEN) -> dict[str, str]:
    """bug -> why it was not proven (`CAUSES`), as last read by hand."""
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    for row in _rows(path, UNPROVEN_COLUMNS):
        if row["cause"] not in CAUSES:
            raise ValueError(f"{path}: cause must be one of {CAUSES}: {row}")
        if row["bug"] in out:
            raise ValueError(f"{path}: {row['bug']} is listed twice")
        out[row["bug"]] = row["cause"]
    return out


def at_line(bug: Bug, finding: Finding) -> bool:
    return finding.path == bug.path and finding.line <= bug.line <= max(
        finding.end_line, finding.line
    )


@dataclass
class Scored:
    """What a reviewer of one introducing pull request saw."""

    bug: Bug
    state: str  # reviewed | missing (no clone) | error (the review did not finish)
    reason: str = ""
    flagged: bool = False  # a finding covers the bug's line
    op_agrees: bool = False  # ... and names the bug's op
    proven: bool = False  # ... and is confirmed
    fix_validated: bool = False
    bug_status: str = ""  # the status of the finding at the line
    bug_reason: str = ""  # ... and why it is not confirmed (its error, or the search's box)
    findings: int = 0
    inline: int = 0  # under comment_on = "proven"
    inline_proven_or_definite: int = 0
    inline_judged: dict[str, int] = field(default_factory=dict)  # verdict -> count
    inline_unjudged: list[Finding] = field(default_factory=list)
    # every inline comment with its verdict ("" unread), for counting a shared PR once
    inline_verdicts: list[tuple[Finding, str]] = field(default_factory=list)
    others: list[Finding] = field(default_factory=list)  # not at the bug's line
    others_judged: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def score(
    bug: Bug,
    findings: Iterable[Finding],
    judgements: Mapping[JudgementKey, str],
    policy: str = "proven",
) -> Scored:
    out = Scored(bug, "reviewed")
    for f in findings:
        out.findings += 1
        hit = at_line(bug, f)
        if hit:
            out.flagged = True
            out.op_agrees = out.op_agrees or bug.matches_op(f)
            if f.status == "confirmed":
                out.proven = True
                out.fix_validated = out.fix_validated or (
                    isinstance(f.fix, dict) and f.fix.get("status") == "validated"
                )
            if not out.bug_status or f.status == "confirmed":
                out.bug_status = f.status
                out.bug_reason = (f.error or "")[:300]
        else:
            out.others.append(f)
        verdict = "real" if hit else judgements.get((bug.id, f.path, f.line, f.op))
        if not hit and verdict:
            out.others_judged[verdict] = out.others_judged.get(verdict, 0) + 1
        if comment_inline(f, policy):
            out.inline += 1
            if f.status == "confirmed" or is_definite(f):
                out.inline_proven_or_definite += 1
            if verdict:
                out.inline_judged[verdict] = out.inline_judged.get(verdict, 0) + 1
            else:
                out.inline_unjudged.append(f)
            out.inline_verdicts.append((f, verdict or ""))
    return out


def per_pull_request(rows: Iterable[Scored]) -> list[Scored]:
    """One row per reviewed pull request: bugs introduced by the same commit of the same
    repository were one pull request, whose reviewer read its comments once. The first row
    stands for the pull request; a comment at another of its bugs' lines counts as real."""
    groups: dict[tuple[str, str], list[Scored]] = {}
    for s in rows:
        if s.state == "reviewed":
            groups.setdefault((s.bug.repo, s.bug.intro_commit), []).append(s)
    out = []
    for group in groups.values():
        first = group[0]
        judged: dict[str, int] = {}
        unjudged: list[Finding] = []
        for f, verdict in first.inline_verdicts:
            if any(at_line(s.bug, f) for s in group):
                verdict = "real"
            if verdict:
                judged[verdict] = judged.get(verdict, 0) + 1
            else:
                unjudged.append(f)
        out.append(replace(first, inline_judged=judged, inline_unjudged=unjudged))
    return out
