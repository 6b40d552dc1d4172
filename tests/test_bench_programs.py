"""bench.programs: its program list stays well-formed, a program's repository is built as the
README says (the artifact's own blocks blanked line for line, its instrumented twins left out),
and the summary counts what it says."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from bench.programs.__main__ import Row, summary
from bench.programs.prepare import Program, blank_inserted, build_repository, load_programs

PROGRAM = """\
import torch
x = torch.rand(3)
'''inserted code'''
from scripts.utils.torch_utils import TorchScheduler
scheduler = TorchScheduler(name="demo")
'''inserted code'''
while True:
    y = torch.log(x)
    \"\"\"inserted code\"\"\"
    scheduler.loss_checker(y)
    \"\"\"inserted code\"\"\"
"""


def test_the_program_list_is_well_formed() -> None:
    programs = load_programs()
    assert len(programs) >= 15 and len({p.id for p in programs}) == len(programs)
    for program in programs:
        assert re.fullmatch(r"[0-9a-f]{40}", program.commit), program.id
        assert program.script.endswith(".py") and 1 <= program.first <= program.last
        assert program.op in ("log", "exp"), program.id


def test_inserted_blocks_are_blanked_line_for_line() -> None:
    blanked = blank_inserted(PROGRAM)
    lines = blanked.splitlines()
    assert len(lines) == len(PROGRAM.splitlines())
    assert lines[7] == "    y = torch.log(x)"  # the op keeps its line number
    assert "scheduler" not in blanked and "inserted" not in blanked
    with pytest.raises(ValueError, match="not closed"):
        blank_inserted("'''inserted code'''\nx = 1\n")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_programs_repository_adds_the_program_as_its_author_wrote_it(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    folder = mirror / "study" / "ID_1"
    folder.mkdir(parents=True)
    (folder / "train.py").write_text(PROGRAM, encoding="utf-8")
    (folder / "train_grist.py").write_text("instrumented = True\n", encoding="utf-8")
    (folder / "myutil.py").write_text("HELP = 1\n", encoding="utf-8")
    _git(mirror, "init", "-q")
    _git(mirror, "add", "-A")
    _git(mirror, "commit", "-q", "-m", "subjects")
    program = Program(
        "demo-1",
        "demo",
        "someone/artifact",
        _git(mirror, "rev-parse", "HEAD"),
        "study/ID_1",
        "train.py",
        8,
        8,
        "log",
    )
    repo = tmp_path / "repo"
    base, head, missing = build_repository(program, mirror, repo)
    assert missing == []
    added = _git(repo, "diff", "--name-only", base, head).splitlines()
    assert sorted(added) == ["myutil.py", "train.py"]  # the instrumented twin is left out
    assert (repo / "train.py").read_text(encoding="utf-8") == blank_inserted(PROGRAM)
    with pytest.raises(ValueError, match="has no nothere.py"):
        build_repository(
            Program(
                "demo-2",
                "demo",
                "someone/artifact",
                program.commit,
                "study/ID_1",
                "nothere.py",
                1,
                1,
                "log",
            ),
            mirror,
            tmp_path / "repo2",
        )


def test_the_summary_counts_confirmations_and_the_baseline() -> None:
    program = Program("p", "p", "r/r", "0" * 40, "f", "s.py", 1, 1, "log")

    def row(outcome: str, search: int, random: int | None, steps: int = 1) -> Row:
        baseline = {
            "search": {"triggered": True, "evaluations": search},
            "random": {"triggered": random is not None, "evaluations": random or 999},
        }
        return Row(
            program,
            outcome,
            wall_seconds=40.0,
            trigger_seconds=0.5,
            evaluations=search,
            steps=steps,
            baseline=baseline,
            timings={"fix": 30.0},
        )

    rows = [
        row("confirmed", 10, 100),
        row("confirmed", 20, 40, steps=3),
        row("confirmed", 10, None),
        Row(program, "error", "no entry"),
        Row(program, "missing", "no clone"),
    ]
    text = "\n".join(summary(rows))
    assert "confirmed at the line: 3/4 (75 %)" in text  # a missing program is not counted
    assert "without the fix stage 10.00 s" in text
    assert "confirmed at a later training step than the first: 1" in text
    assert "both trigger on 2, only the search on 1" in text
    assert "evaluations median 6.00x" in text  # 100/10 and 40/20
