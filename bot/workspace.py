"""A private git workspace holding a PR's base and head commits.

`git fetch` by SHA from the repository's clone URL, with the installation token handed to git
as an HTTP header through GIT_CONFIG_* environment variables: it is in no URL, no argv, no
.git/config, so nothing in the workspace (which the analysis later exports for the sandbox)
carries it. The head is checked out for the code excerpts of the report page; the settings
are read from the two commits' git objects (analyzers/policy.py: policy from the base).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


class WorkspaceError(Exception):
    pass


def _git_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "true",
            **extra,
        }
    )
    return env


def git(repo: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 600) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        env=_git_env(env or {}),
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise WorkspaceError(f"git {args[0]} failed: {message[-2000:]}")
    return proc.stdout.decode("utf-8", "replace").strip()


def has_commit(repo: Path, sha: str) -> bool:
    proc = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"],
        capture_output=True,
        env=_git_env({}),
        check=False,
    )
    return proc.returncode == 0


@contextmanager
def pull_workspace(
    clone_url: str,
    base_sha: str,
    head_sha: str,
    auth_env: Mapping[str, str],
    root: str = "",
    number: int | None = None,
) -> Iterator[Path]:
    """A temporary repository with base and head fetched and head checked out; removed after.

    The head comes through `refs/pull/N/head`, which the base repository keeps for every PR,
    forks included; a head that ref no longer points at is fetched by SHA."""
    if root:
        Path(root).mkdir(parents=True, exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix="numcheck-pr-", dir=root or None))
    try:
        git(where, "init", "-q")
        git(where, "config", "user.name", "numcheck")
        git(where, "config", "user.email", "numcheck@localhost")
        wanted = (
            [base_sha, f"+refs/pull/{number}/head:refs/numcheck/head"]
            if number is not None
            else [base_sha, head_sha]
        )
        git(
            where,
            "fetch",
            "-q",
            "--no-tags",
            "--no-recurse-submodules",
            clone_url,
            *wanted,
            env=auth_env,
        )
        if not has_commit(where, head_sha):
            git(
                where,
                "fetch",
                "-q",
                "--no-tags",
                "--no-recurse-submodules",
                clone_url,
                head_sha,
                env=auth_env,
            )
        git(where, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", head_sha)
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)
