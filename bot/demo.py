"""The sample repository `numcheck demo` reviews: a small model package and a PR to it.

The files ship with numcheck (bot/samples/sample_pr/{base,head}); this module turns them into
a real git repository with a `main` branch and a `feature` branch, so the demo exercises the
same git diff path as a review of any checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SAMPLES = Path(__file__).parent / "samples" / "sample_pr"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "numcheck demo",
    "GIT_AUTHOR_EMAIL": "demo@numcheck.invalid",
    "GIT_COMMITTER_NAME": "numcheck demo",
    "GIT_COMMITTER_EMAIL": "demo@numcheck.invalid",
}


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, **GIT_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )


def _copy_tree(src: Path, dst: Path) -> None:
    for path in dst.iterdir():
        if path.name != ".git":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    shutil.copytree(src, dst, dirs_exist_ok=True)


def build_sample_repo(where: Path | None = None) -> tuple[Path, str, str]:
    """(repo, base ref, head ref). Without `where` the repository goes in a new temp dir,
    which the caller removes."""
    repo = Path(where) if where else Path(tempfile.mkdtemp(prefix="numcheck-demo-"))
    repo.mkdir(parents=True, exist_ok=True)
    if any(repo.iterdir()):
        raise FileExistsError(f"{repo} is not empty; give an empty or new directory")
    _git(repo, "init", "-q")
    _copy_tree(SAMPLES / "base", repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Initial model")
    _git(repo, "checkout", "-q", "-b", "feature")
    _copy_tree(SAMPLES / "head", repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Hand-written losses and attention masking")
    return repo, "main", "feature"
