"""The fix stage end to end: the real harness confirms findings and validates candidate fixes on
a scratch copy of the repository (the reproducer run in a child Python against the patched
copy), the pipeline merges the `fix` records, and `numcheck review --fix/--diff` writes or
prints the validated patches.

The harness runs through `fix_support.DirectRunner` (the harness's own child process, without
the local runner's isolation, which has tests of its own), so each run costs one child Python.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import GitRepoFactory, RunMain
from fix_support import DirectRunner
from harness_support import with_reproducers

import runners.pipeline
from analyzers.fix.apply import apply_to_source, write_fixes
from analyzers.fix.patch import Patch, apply_suggestion
from analyzers.model import AnalysisResult, Finding
from analyzers.report.jsonout import SCHEMA_PATH, finding_from_json
from analyzers.report.markdown import render_markdown
from analyzers.static import scan_source
from runners.local import RunResult
from runners.pipeline import _merge

PATH = "fixstage/losses.py"
SOURCE = """\
import torch


def log_probs(logits: torch.Tensor) -> torch.Tensor:
    return torch.log(torch.softmax(logits, dim=-1))


def log_past_a_wall(x: torch.Tensor) -> torch.Tensor:
    wall = torch.where(x <= 0, torch.full_like(x, float("inf")), torch.zeros_like(x))
    return torch.log(x) + wall
"""


def make_repo(root: Path) -> Path:
    (root / "fixstage").mkdir(parents=True)
    (root / "fixstage" / "__init__.py").write_text("")
    (root / PATH).write_text(SOURCE)
    return root


def findings_of(repo: Path) -> dict[str, dict[str, Any]]:
    scan = scan_source((repo / PATH).read_text(), PATH)
    return {f.function: f.to_json() for f in scan.findings}


def job(repo: Path, findings: list[dict[str, Any]], **settings: Any) -> dict[str, Any]:
    return {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "harvest": False,
        "search_seconds": 1.0,
        "finding_timeout": 60.0,
        "fix_timeout": 60.0,
        **settings,
    }


def records_for(result: RunResult, fingerprint: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the confirmation record, the fix stage's record) of one finding."""
    mine = [r for r in result.records if r["fingerprint"] == fingerprint]
    confirmation = [r for r in mine if r.get("stage") is None]
    fixes = [r for r in mine if r.get("stage") == "fix"]
    assert len(confirmation) == 1 and len(fixes) == 1, (mine, result.stderr[-2000:])
    return confirmation[0], fixes[0]["fix"]


def run_script(repo: Path, script: str) -> subprocess.CompletedProcess[str]:
    path = repo / "repro_test_numcheck.py"
    path.write_text(script)
    try:
        return subprocess.run(
            [sys.executable, str(path)],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"},
        )
    finally:
        path.unlink()


@pytest.fixture(scope="module")
def run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, dict[str, Any]], RunResult]:
    repo = make_repo(tmp_path_factory.mktemp("fixstage") / "repo")
    found = findings_of(repo)
    result = with_reproducers(
        DirectRunner().run(job(repo, [found["log_probs"], found["log_past_a_wall"]]), timeout=300),
        [found["log_probs"], found["log_past_a_wall"]],
    )
    assert result.outcome == "ok", result.stderr[-3000:]
    return repo, found, result


def test_confirmed_finding_gets_a_validated_fix_whose_patch_makes_the_reproducer_pass(
    run: tuple[Path, dict[str, dict[str, Any]], RunResult], tmp_path: Path
) -> None:
    repo, found, result = run
    confirmation, fix = records_for(result, found["log_probs"]["fingerprint"])
    assert confirmation["status"] == "confirmed" and confirmation["reproducer"]
    assert fix["status"] == "validated", fix
    assert (fix["kind"], fix["name"]) == ("stable-api", "log-softmax")
    assert fix["replacement"] == "    return torch.log_softmax(logits, dim=-1)\n"
    assert (fix["start_line"], fix["end_line"], fix["suggestion_complete"]) == (5, 5, True)
    checks = {c["name"]: c for c in fix["validation"]["checks"]}
    assert checks["reproducer"]["ran"] and checks["reproducer"]["passed"]
    assert checks["equivalence"]["ran"] and checks["equivalence"]["figures"]["compared"] > 0
    assert fix["max_abs_deviation"] < 1e-4
    assert (repo / PATH).read_text() == SOURCE  # the checkout itself was never written
    # the reproducer fails on the head, and passes once the suggestion is committed
    assert "AssertionError" in run_script(repo, confirmation["reproducer"]).stderr
    patched = make_repo(tmp_path / "patched")
    (patched / PATH).write_text(
        apply_suggestion(
            SOURCE,
            Patch(
                **{
                    k: fix[k]
                    for k in (
                        "kind",
                        "name",
                        "description",
                        "path",
                        "diff",
                        "start_line",
                        "end_line",
                        "replacement",
                        "original",
                        "suggestion_complete",
                    )
                }
            ),
        )
    )
    done = run_script(patched, confirmation["reproducer"])
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_confirmation_is_out_before_any_fix_stage_starts(
    run: tuple[Path, dict[str, dict[str, Any]], RunResult],
) -> None:
    """Fixes share the run's wall clock: they go last, so a slow one cannot cost a later
    finding its confirmation."""
    _, _, result = run
    stages = [r.get("stage", "confirm") for r in result.records]
    assert stages == ["confirm", "confirm", "fix", "fix"], stages


def test_no_candidate_validates_and_the_finding_keeps_its_reproducer(
    run: tuple[Path, dict[str, dict[str, Any]], RunResult],
) -> None:
    _, found, result = run
    confirmation, fix = records_for(result, found["log_past_a_wall"]["fingerprint"])
    assert confirmation["status"] == "confirmed" and confirmation["reproducer"]
    assert fix["status"] == "none-validated"
    assert [t["name"] for t in fix["tried"]] == ["clamp", "where"]
    for tried in fix["tried"]:  # the wall is still there: the reproducer still fails
        assert tried["rejected_because"].startswith("reproducer: the reproducer still fails")
    # merged into the Finding: confirmed, reproducer kept, the rejections recorded
    finding = finding_from_json(found["log_past_a_wall"])
    analysis = AnalysisResult(".", None, None, {}, findings=[finding])
    _merge(analysis, result, {})
    assert finding.status == "confirmed" and finding.reproducer
    assert finding.fix is not None and finding.fix["status"] == "none-validated"
    assert analysis.timings["fix"] == finding.fix["seconds"] > 0
    markdown = render_markdown(analysis)
    assert "```suggestion" not in markdown
    assert "No checked fix: 2 candidates tried, none passed" in markdown
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(analysis.to_json())


def test_a_failing_fix_stage_keeps_the_confirmation(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    found = findings_of(repo)["log_probs"]
    result = DirectRunner().run(job(repo, [found], fix_timeout=0.05), timeout=300)
    confirmation, fix = records_for(result, found["fingerprint"])
    assert confirmation["status"] == "confirmed" and confirmation["reproducer_plan"]
    assert fix["status"] == "error" and fix["reason"].startswith("timeout: the fix stage")
    off = DirectRunner().run(job(repo, [found], fix=False), timeout=300)
    assert [r.get("stage") for r in off.records] == [None]
    assert off.records[0]["status"] == "confirmed"


def test_markdown_suggestion_block_covers_exactly_the_fix_lines() -> None:
    base = dict(
        path="m.py",
        column=11,
        end_column=20,
        function="f",
        op="log",
        framework="torch",
        call="torch.log(p)",
        operand="p",
        why="p may be 0",
        rule="unguarded-domain",
        status="confirmed",
    )
    fix = {
        "status": "validated",
        "kind": "clamp",
        "name": "clamp",
        "path": "m.py",
        "description": "clamp",
        "start_line": 3,
        "end_line": 4,
        "original": "    y = torch.log(\n        p)\n",
        "replacement": "    y = torch.log(\n        p.clamp_min(1e-6))\n",
        "suggestion_complete": True,
        "imports": [],
        "diff": "--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,2 @@\n-    y = torch.log(\n-        p)\n"
        "+    y = torch.log(\n+        p.clamp_min(1e-6))\n",
    }
    finding = Finding(line=3, end_line=4, fix=fix, **base)  # type: ignore[arg-type]
    text = render_markdown(AnalysisResult(".", None, None, {}, findings=[finding]))
    assert "### m.py:3-4" in text
    assert "```suggestion\n    y = torch.log(\n        p.clamp_min(1e-6))\n```" in text
    assert "```diff" not in text
    # a fix that adds an import cannot be a suggestion block: the diff is shown instead
    finding.fix = {**fix, "suggestion_complete": False}
    text = render_markdown(AnalysisResult(".", None, None, {}, findings=[finding]))
    assert "```suggestion" not in text and "```diff\n--- a/m.py" in text
    # nor one whose lines are not the commented ones (the finding is on line 4 only)
    narrow = Finding(line=4, end_line=4, fix=fix, **base)  # type: ignore[arg-type]
    from analyzers.report import inline_comment

    assert "```suggestion" not in inline_comment(narrow)
    assert "```suggestion" in inline_comment(narrow, (3, 4))


def test_several_fixes_in_one_file_are_relocated_one_after_another() -> None:
    source = (
        "import torch\n\n\ndef f(a, b):\n    x = torch.log(a)\n    y = torch.log(b)\n"
        "    return x + y\n"
    )

    def finding(line: int, original: str, replacement: str, imports: list[str]) -> Finding:
        fix = {
            "status": "validated",
            "path": "m.py",
            "start_line": line,
            "end_line": line,
            "original": original,
            "replacement": replacement,
            "imports": imports,
        }
        return Finding(
            "m.py",
            line,
            4,
            line,
            20,
            "f",
            "log",
            "torch",
            "torch.log(a)",
            "a",
            "why",
            "unguarded-domain",
            fix=fix,
        )

    first = finding(
        5,
        "    x = torch.log(a)\n",
        "    x = torch.log(\n        a.clamp_min(1e-6)\n    )\n",
        ["import math"],
    )
    second = finding(6, "    y = torch.log(b)\n", "    y = torch.log(b.clamp_min(1e-6))\n", [])
    fixed = apply_to_source("m.py", source, [second, first])
    assert fixed.applied == [first.fingerprint, second.fingerprint] and not fixed.skipped
    assert fixed.after == (
        "import torch\nimport math\n\n\ndef f(a, b):\n    x = torch.log(\n"
        "        a.clamp_min(1e-6)\n    )\n"
        "    y = torch.log(b.clamp_min(1e-6))\n    return x + y\n"
    )
    gone = finding(6, "    z = torch.log(c)\n", "    z = 0\n", [])
    assert apply_to_source("m.py", source, [gone]).skipped


# ---------------------------------------------------------------- the CLI

MAIN = "import torch\n\n\ndef old(x):\n    return x * 2\n"
FEATURE = (
    MAIN
    + """

def log_probs(logits: torch.Tensor) -> torch.Tensor:
    return torch.log(torch.softmax(logits, dim=-1))


def angle(c: torch.Tensor) -> torch.Tensor:
    return torch.acos(c)
"""
)


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> DirectRunner:
    runner = DirectRunner()
    monkeypatch.setattr(runners.pipeline, "LocalRunner", lambda: runner)
    return runner


CONFIG = "search_seconds = 0.5\nharvest = false\n"


def test_review_fix_rewrites_the_file_and_a_re_review_finds_nothing(
    git_repo: GitRepoFactory, run_main: RunMain, direct: DirectRunner
) -> None:
    repo = git_repo({"model.py": MAIN, ".numcheck.toml": CONFIG}, {"model.py": FEATURE})
    code, out, err = run_main(["review", str(repo.root), "--base", "main", "--fix"])
    assert code == 1, err
    assert "fixed 2 findings in model.py" in err  # two fixes, one after the other
    text = (repo.root / "model.py").read_text()
    assert "    return torch.log_softmax(logits, dim=-1)\n" in text
    assert "    return torch.acos(c.clamp(-1 + 1e-6, 1 - 1e-6))\n" in text
    assert (
        text.replace(
            "torch.log_softmax(logits, dim=-1)", "torch.log(torch.softmax(logits, dim=-1))"
        ).replace("c.clamp(-1 + 1e-6, 1 - 1e-6)", "c")
        == FEATURE
    )  # nothing else changed
    assert direct.jobs and direct.jobs[0]["fix"] is True
    repo.git("commit", "-qam", "numcheck fixes")
    code, out, err = run_main(["review", str(repo.root), "--base", "main", "--static-only"])
    assert code == 0, out + err


def test_review_diff_prints_one_unified_diff(
    git_repo: GitRepoFactory, run_main: RunMain, direct: DirectRunner
) -> None:
    repo = git_repo({"model.py": MAIN, ".numcheck.toml": CONFIG}, {"model.py": FEATURE})
    repo.checkout("main")  # --diff reads the head from git: the working tree does not matter
    code, out, err = run_main(
        ["review", str(repo.root), "--base", "main", "--head", "feature", "--diff"]
    )
    assert code == 1, err
    assert out.startswith("--- a/model.py\n+++ b/model.py\n")
    assert out.count("--- a/model.py") == 1 and out.count("@@") == 2
    assert "-    return torch.log(torch.softmax(logits, dim=-1))\n" in out
    assert "+    return torch.log_softmax(logits, dim=-1)\n" in out
    assert "+    return torch.acos(c.clamp(-1 + 1e-6, 1 - 1e-6))\n" in out
    repo.checkout("feature")
    assert (repo.root / "model.py").read_text() == FEATURE  # --diff writes nothing
    applied = subprocess.run(
        ["git", "-C", str(repo.root), "apply", "--check", "-"],
        input=out,
        text=True,
        capture_output=True,
    )
    assert applied.returncode == 0, applied.stderr


class Recording:
    """A runner that records the job and confirms nothing (for the flags' plumbing)."""

    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []

    def run(self, job: dict[str, Any], timeout: float, **_: Any) -> RunResult:
        self.jobs.append(job)
        return RunResult("ok", [])


def test_no_fix_turns_the_stage_off_and_fix_refuses_a_head_not_checked_out(
    git_repo: GitRepoFactory, run_main: RunMain, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = Recording()
    monkeypatch.setattr(runners.pipeline, "LocalRunner", lambda: recording)
    repo = git_repo({"model.py": MAIN, ".numcheck.toml": CONFIG}, {"model.py": FEATURE})
    assert run_main(["review", str(repo.root), "--base", "main", "--no-fix"])[0] == 1
    assert run_main(["review", str(repo.root), "--base", "main"])[0] == 1
    assert [j["fix"] for j in recording.jobs] == [False, True]
    with pytest.raises(SystemExit) as usage:
        run_main(["review", str(repo.root), "--base", "main", "--fix", "--no-fix"])
    assert usage.value.code == 2
    repo.checkout("main")
    code, _, err = run_main(
        ["review", str(repo.root), "--base", "main", "--head", "feature", "--fix"]
    )
    assert code == 2 and "is not the checked-out commit" in err
    assert len(recording.jobs) == 2  # refused before any analysis
    assert (repo.root / "model.py").read_text() == MAIN


def test_fix_leaves_a_file_with_uncommitted_changes_alone(git_repo: GitRepoFactory) -> None:
    repo = git_repo({"m.py": "import torch\n"}, {"m.py": "import torch\nx = torch.log(a)\n"})
    fix = {
        "status": "validated",
        "path": "m.py",
        "start_line": 2,
        "end_line": 2,
        "original": "x = torch.log(a)\n",
        "replacement": "x = torch.log(a.clamp_min(1))\n",
    }
    finding = Finding(
        "m.py",
        2,
        4,
        2,
        16,
        "",
        "log",
        "torch",
        "torch.log(a)",
        "a",
        "why",
        "unguarded-domain",
        fix=fix,
    )
    (repo.root / "m.py").write_text("import torch\nx = torch.log(a)  # edited\n")
    (fixed,) = write_fixes(repo.root, "HEAD", [finding])
    assert not fixed.applied and "m.py has uncommitted changes" in fixed.skipped[0][1]
    assert (repo.root / "m.py").read_text() == "import torch\nx = torch.log(a)  # edited\n"
    repo.git("checkout", "--", "m.py")
    (fixed,) = write_fixes(repo.root, "HEAD", [finding])
    assert fixed.applied == [finding.fingerprint]
    assert (repo.root / "m.py").read_text() == "import torch\nx = torch.log(a.clamp_min(1))\n"


def test_scratch_copy_leaves_out_git_and_caches(tmp_path: Path) -> None:
    from runners.harness import scratch_copy

    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "repo" / "pkg" / "m.py").write_text("x = 1\n")
    copy = scratch_copy(tmp_path / "repo", tmp_path / "copy")
    assert (copy / "pkg" / "m.py").read_text() == "x = 1\n"
    assert not (copy / ".git").exists() and not (copy / "pkg" / "__pycache__").exists()
    shutil.rmtree(copy)
