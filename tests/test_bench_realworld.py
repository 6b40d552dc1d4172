"""bench.realworld: its data files stay well-formed, and its scoring counts what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzers.model import Finding
from bench.realworld.__main__ import summary
from bench.realworld.corpus import (
    CAUSES,
    Bug,
    load_bugs,
    load_judgements,
    load_unproven,
    per_pull_request,
    score,
)
from bench.realworld.review import find_clone, rescored


def test_the_bug_list_is_well_formed() -> None:
    bugs = load_bugs()
    assert len(bugs) >= 30 and len({b.repo for b in bugs}) >= 10
    for bug in bugs:
        assert re.fullmatch(r"[0-9a-f]{40}", bug.intro_commit), bug.id
        assert re.fullmatch(r"[0-9a-f]{40}", bug.fix_commit), bug.id
        assert bug.intro_commit != bug.fix_commit and bug.line >= 1 and bug.path.endswith(".py")
        assert bug.framework in ("torch", "tf", "jax"), bug.id
        assert len(bug.excerpt) <= 100


def test_every_judgement_names_a_bug_and_a_verdict() -> None:
    ids = {b.id for b in load_bugs()}
    judgements = load_judgements()
    assert judgements and {bug for bug, *_ in judgements} <= ids
    assert set(judgements.values()) <= {"real", "borderline", "noise"}


def test_every_unproven_cause_names_a_bug_and_a_cause() -> None:
    ids = {b.id for b in load_bugs()}
    causes = load_unproven()
    assert causes and set(causes) <= ids and set(causes.values()) <= set(CAUSES)


def test_a_cause_outside_the_list_or_a_bug_listed_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "unproven.tsv"
    path.write_text("bug\tcause\tnote\nb\tbad luck\tx\n", encoding="utf-8")
    with pytest.raises(ValueError, match="cause must be one of"):
        load_unproven(path)
    path.write_text("bug\tcause\tnote\nb\tbudget\tx\nb\tnumcheck\ty\n", encoding="utf-8")
    with pytest.raises(ValueError, match="listed twice"):
        load_unproven(path)


def test_the_summary_counts_unproven_bugs_by_their_cause() -> None:
    """Only bugs not proven in this run are counted; one with no cause read, and one proven
    now that the file still lists, are said apart."""
    rows = []
    for name, status in (("a", "error"), ("b", "error"), ("c", "confirmed"), ("d", "error")):
        bug = Bug(name, "o/r", "torch", "f" * 40, "e" * 40, "m.py", 10, "log", "x", "y")
        rows.append(score(bug, [_finding(10, status=status)], {}))
    causes = {"a": "old-framework", "b": "old-framework", "c": "numcheck"}
    line = next(x for x in summary(rows, True, causes) if "by cause" in x)
    assert "2 old-framework" in line and "numcheck" not in line.split(";")[0]
    assert "1 with no cause read" in line and "1 proven now that unproven.tsv lists" in line
    assert not any("by cause" in x for x in summary(rows, False, causes))


def _bug() -> Bug:
    return Bug("b", "o/r", "torch", "f" * 40, "e" * 40, "m.py", 10, "log-softmax", "x", "y")


def _finding(
    line: int, op: str = "log", rule: str = "log-softmax", status: str = "potential"
) -> Finding:
    return Finding(
        path="m.py",
        line=line,
        column=0,
        end_line=line,
        end_column=5,
        function="f",
        op=op,
        framework="torch",
        call=f"c{line}",
        operand="x",
        why="",
        rule=rule,
        status=status,
    )  # type: ignore[arg-type]


def test_scoring_counts_the_bug_line_inline_comments_and_judgements() -> None:
    bug_line = _finding(10, status="confirmed")
    bug_line.fix = {"status": "validated"}
    unproven = _finding(20, op="div", rule="unguarded-domain")
    definite = _finding(30, rule="eps-absorbed")
    scored = score(
        _bug(),
        [bug_line, unproven, definite],
        {("b", "m.py", 20, "div"): "noise", ("b", "m.py", 30, "log"): "borderline"},
    )
    assert scored.flagged and scored.op_agrees and scored.proven and scored.fix_validated
    assert (scored.findings, scored.inline, scored.inline_proven_or_definite) == (3, 2, 2)
    assert scored.inline_judged == {"real": 1, "borderline": 1}  # the bug's own line is real
    assert scored.others_judged == {"noise": 1, "borderline": 1}
    missed = score(_bug(), [unproven], {})
    assert not missed.flagged and missed.inline == 0 and missed.inline_unjudged == []


def test_two_bugs_of_one_pull_request_count_its_comments_once() -> None:
    """Two bugs introduced by one commit were one review: its inline comments are read once,
    and a comment at either bug's line is real, whichever row stands for the PR."""
    from dataclasses import replace

    first, second = _bug(), replace(_bug(), id="b2", line=20)
    other = replace(_bug(), id="c", intro_commit="d" * 40)
    findings = [
        _finding(10, status="confirmed"),
        _finding(20, op="div", rule="unguarded-domain", status="confirmed"),
        _finding(30, rule="eps-absorbed"),
    ]
    judgements = {
        ("b", "m.py", 30, "log"): "noise",
        ("b2", "m.py", 30, "log"): "noise",
        ("c", "m.py", 20, "div"): "borderline",
        ("c", "m.py", 30, "log"): "noise",
    }
    rows = [score(b, findings, judgements) for b in (first, second, other)]
    assert [r.inline_judged for r in rows[:2]] == [
        {"real": 1, "noise": 1},  # line 20 is unread under the first bug
        {"real": 1, "noise": 1},
    ]
    prs = per_pull_request(rows)
    assert [p.bug.id for p in prs] == ["b", "c"]
    assert prs[0].inline == 3 and prs[0].inline_judged == {"real": 2, "noise": 1}
    assert prs[0].inline_unjudged == []
    lines = summary(rows, True, {})
    assert any("max 3 (2 pull requests)" in x for x in lines)
    assert any("noise 2/6 (33 %)" in x for x in lines)  # 3 of PR b's, 3 of PR c's


def test_a_kept_review_is_scored_again_with_the_judgements_of_now(tmp_path: Path) -> None:
    """`--rescore`: a finding read after the run counts without running the review again;
    a bug whose review was not kept is missing, not an error."""
    import json

    findings = [_finding(10, status="confirmed"), _finding(30, rule="eps-absorbed")]
    (tmp_path / "b.json").write_text(
        json.dumps({"findings": [f.to_json() for f in findings], "errors": []})
    )
    before = rescored(_bug(), tmp_path, {})
    assert before.state == "reviewed" and before.inline == 2
    assert before.inline_judged == {"real": 1} and len(before.inline_unjudged) == 1
    after = rescored(_bug(), tmp_path, {("b", "m.py", 30, "log"): "noise"})
    assert after.inline_judged == {"real": 1, "noise": 1} and after.inline_unjudged == []
    gone = rescored(_bug(), tmp_path / "elsewhere", {})
    assert gone.state == "missing" and "no kept review" in gone.reason


@pytest.mark.parametrize("layout", ["o+r/repo", "o+r", "o/r.git"])
def test_clones_are_found_in_each_documented_layout(tmp_path: Path, layout: str) -> None:
    (tmp_path / layout).mkdir(parents=True)
    (tmp_path / layout / "HEAD").write_text("ref: refs/heads/main\n")
    assert find_clone(tmp_path, "o/r") == tmp_path / layout
    assert find_clone(tmp_path, "o/other") is None
