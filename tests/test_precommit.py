"""The pre-commit hooks, run by pre-commit itself (from PyPI) with `pre-commit try-repo`.

try-repo clones a hooks repository at a commit and installs it into a fresh hook environment
(a virtualenv, `pip install .`) as a user's `pre-commit run` would. The repository here is a
git clone of this working tree (tracked files and new files alike, as they are now), so the
hooks under test are the ones in .pre-commit-hooks.yaml today. The hook environment gets
numcheck's base dependencies only (libcst, numpy), like a user's without
`additional_dependencies`: the static hook must work there, and the fix hook must say what
it needs.

One try-repo run per file, each running both hooks in one environment build (seconds: pip
installs from the machine's configured index).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / ".pre-commit-hooks.yaml"

BUGGY = """\
import torch


def loss(p):
    return torch.log(p).mean()
"""
CLEAN = """\
import torch


def loss(p):
    return torch.log(p.clamp_min(1e-6)).mean()
"""


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@numcheck.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@numcheck.invalid",
        }
    )
    proc = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding this working tree as it is now, committed."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    listed = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    clone = tmp_path_factory.mktemp("numcheck-hooks") / "numcheck"
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if source.is_file() and not source.is_symlink():
            target = clone / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    assert (clone / ".pre-commit-hooks.yaml").is_file()
    _git(clone, "init", "-q", "-b", "main")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-q", "-m", "numcheck working tree")
    return clone


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's repository with one buggy and one clean file staged."""
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "buggy.py").write_text(BUGGY, encoding="utf-8")
    (repo / "clean.py").write_text(CLEAN, encoding="utf-8")
    _git(repo, "add", "buggy.py", "clean.py")
    return repo


def try_repo(
    hooks_repo: Path, project: Path, tmp_path: Path, *files: str
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "PRE_COMMIT", "NUMCHECK_", "VIRTUAL_ENV"))
    }
    env.update(
        {
            "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
            "NO_COLOR": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(hooks_repo),
            "--color",
            "never",
            "--files",
            *files,
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_hooks_manifest() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}
    assert set(hooks) == {"numcheck", "numcheck-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types"] == ["python"]
    assert "--static-only" in hooks["numcheck"]["entry"]
    assert "--fix" in hooks["numcheck-fix"]["entry"]


def test_hooks_fail_on_a_buggy_file(hooks_repo: Path, project: Path, tmp_path: Path) -> None:
    proc = try_repo(hooks_repo, project, tmp_path, "buggy.py")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    # the static hook: fails, with the finding
    assert "numcheck (NaN/Inf static check)" in output
    assert "buggy.py:5:12: warning log [potential]" in output
    assert "1 finding (1 potential) in 1 file" in output
    # the fix hook, in an environment without torch: fails, saying what to add
    assert "numcheck fix (validated NaN/Inf fixes)" in output
    assert "additional_dependencies: ['torch==2.13.0']" in output
    assert output.count("Failed") == 2
    assert (project / "buggy.py").read_text(encoding="utf-8") == BUGGY  # nothing rewritten


def test_hooks_pass_on_a_clean_file(hooks_repo: Path, project: Path, tmp_path: Path) -> None:
    proc = try_repo(hooks_repo, project, tmp_path, "clean.py")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert output.count("Passed") == 2
    assert "Failed" not in output
