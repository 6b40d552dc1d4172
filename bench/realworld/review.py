"""Reviewing one bug's introducing commit as a pull request, with the CLI a user runs.

The review is a child process (`python -m bot.cli review CLONE --base INTRO^ --head INTRO
--format json`), so a crash or a hang in one repository is that bug's error and the others
still run; its time limit is enforced by killing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from analyzers.report.jsonout import finding_from_json
from bench.realworld.corpus import Bug, JudgementKey, Scored, score

REPO_ROOT = Path(__file__).resolve().parents[2]
# What a review may take past `timeout`, the sandboxed run's wall clock, before the benchmark
# kills it: the static pass and the dependency install come before that run (a minute and
# more on a pull request that brings a whole library in), and the product bounds each of them
# itself. Killed at `timeout` itself, such a review lost every proof its sandbox had already
# sent, which the product keeps and would have posted.
REVIEW_SLACK = 600.0


def default_mirrors() -> Path:
    return Path(os.environ.get("NUMCHECK_MIRRORS") or REPO_ROOT / "bench" / "out" / "mirrors")


def find_clone(mirrors: Path, repo: str) -> Path | None:
    """The git directory of `owner/name` under `mirrors`, in any of the layouts the README
    names; None when it is not there."""
    owner, _, name = repo.partition("/")
    for candidate in (
        mirrors / f"{owner}+{name}" / "repo",
        mirrors / f"{owner}+{name}",
        mirrors / owner / f"{name}.git",
        mirrors / owner / name,
    ):
        if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
            return candidate
    return None


def _has_commit(clone: Path, commit: str) -> bool:
    return (
        subprocess.run(
            [
                "git",
                "--git-dir" if (clone / "HEAD").is_file() else "-C",
                str(clone),
                "cat-file",
                "-e",
                f"{commit}^{{commit}}",
            ],
            capture_output=True,
        ).returncode
        == 0
    )


def review(
    bug: Bug,
    mirrors: Path,
    judgements: dict[JudgementKey, str],
    *,
    dynamic: bool,
    timeout: float,
    search_seconds: float,
    keep: Path | None = None,
) -> Scored:
    clone = find_clone(mirrors, bug.repo)
    if clone is None:
        return Scored(bug, "missing", f"no clone of {bug.repo} under {mirrors}")
    for commit in (bug.intro_commit, bug.fix_commit):
        if not _has_commit(clone, commit):
            return Scored(bug, "missing", f"{bug.repo} has no commit {commit[:12]}")
    with tempfile.TemporaryDirectory(prefix="numcheck-realworld-") as scratch:
        out = Path(scratch) / "result.json"
        config = Path(scratch) / "numcheck.toml"
        # the repositories' own configuration is not read: every bug is reviewed the way an
        # unconfigured installation would, except for the search budget
        config.write_text(
            f"[tool.numcheck]\nsearch_seconds = {search_seconds}\n"
            f"dynamic_timeout = {max(int(timeout) - 30, 30)}\n",
            encoding="utf-8",
        )
        argv = [
            sys.executable,
            "-m",
            "bot.cli",
            "review",
            str(clone),
            "--base",
            f"{bug.intro_commit}^",
            "--head",
            bug.intro_commit,
            "--format",
            "json",
            "-o",
            str(out),
            "--quiet",
            "--config",
            str(config),
        ]
        if not dynamic:
            argv.append("--static-only")
        started = time.monotonic()
        try:
            proc = subprocess.run(
                argv, cwd=scratch, capture_output=True, text=True, timeout=timeout + REVIEW_SLACK
            )
        except subprocess.TimeoutExpired:
            return Scored(
                bug,
                "error",
                f"the review did not finish within {timeout + REVIEW_SLACK:.0f} s",
                seconds=time.monotonic() - started,
            )
        seconds = time.monotonic() - started
        if proc.returncode not in (0, 1) or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return Scored(bug, "error", f"exit {proc.returncode}: {tail[0][:300]}", seconds=seconds)
        text = out.read_text(encoding="utf-8")
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{bug.id}.json").write_text(text, encoding="utf-8")
        data = json.loads(text)
    scored = _scored(bug, data, judgements)
    scored.seconds = seconds
    return scored


def rescored(bug: Bug, kept: Path, judgements: dict[JudgementKey, str]) -> Scored:
    """A review kept by an earlier run (`--reviews`), scored again with today's judgements:
    findings read by hand after the run count without running the review again."""
    path = kept / f"{bug.id}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return Scored(bug, "missing", f"no kept review ({type(exc).__name__})")
    return _scored(bug, data, judgements)


def _scored(bug: Bug, data: dict[str, Any], judgements: dict[JudgementKey, str]) -> Scored:
    scored = score(bug, (finding_from_json(f) for f in data["findings"]), judgements)
    scored.errors = [
        f"{e['stage']}: {e.get('path') or ''} {e['message']}"[:300] for e in data.get("errors", [])
    ]
    return scored
