"""Shared fixtures: real git repositories scripted like a pull request, and the real CLI.

Reviews are only as good as the diff they see, so tests build actual repositories with `git`
instead of faking ChangedFile objects, and run the installed `numcheck` console script the way
a user or CI would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import pytest

from bot.cli import main as cli_main

# Content of a file in a commit; None deletes the file.
FileContent = str | bytes | None


def _git_env() -> dict[str, str]:
    """The caller's environment without anything that would make git act on another repo, or
    read the developer's own config (signing, hooks, default branch)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
        }
    )
    return env


class GitRepo:
    """A throwaway repository with helpers to script commits and branches."""

    def __init__(self, root: Path, *, init: bool = True) -> None:
        self.root = root
        if not init:
            return  # an existing repository, e.g. one `numcheck demo --keep` built
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "numcheck tests")
        self.git("config", "user.email", "tests@numcheck.invalid")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(self.root), *args], capture_output=True, env=_git_env(), check=False
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"git {' '.join(args)} failed: {proc.stderr.decode('utf-8', 'replace')}"
            )
        return proc.stdout.decode("utf-8", "replace").strip()

    def write(self, files: Mapping[str, FileContent]) -> None:
        """Write (str as UTF-8, bytes as is) or delete (None) files in the working tree."""
        for rel, content in files.items():
            path = self.root / rel
            if content is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")

    def commit(
        self, files: Mapping[str, FileContent] | None = None, message: str = "change"
    ) -> str:
        """Apply `files` and commit everything; returns the new commit's SHA."""
        self.write(files or {})
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.sha("HEAD")

    def checkout(self, branch: str, *, create: bool = False) -> None:
        self.git("checkout", "-q", *(["-b"] if create else []), branch)

    def sha(self, ref: str) -> str:
        return self.git("rev-parse", "--verify", f"{ref}^{{commit}}")


class GitRepoFactory(Protocol):
    def __call__(
        self,
        main: Mapping[str, FileContent],
        feature: Mapping[str, FileContent] | None = None,
        *,
        name: str = "repo",
    ) -> GitRepo: ...


# Test tiers, one per file (`pytest -m static`, `-m "not app"`, ...). `static` needs neither
# torch nor a service: `pip install -e '.[dev-static]'` runs it, and when it is the only tier
# asked for, the other files are not even imported. tests/test_tiers.py checks that every
# test file is in exactly one tier.
TIERS: dict[str, tuple[str, ...]] = {
    "static": (
        "test_aliases",
        "test_app_manifest",
        "test_bench_programs",
        "test_branches",
        "test_bench_realworld",
        "test_config",
        "test_usage",
        "test_corpus",
        "test_declared",
        "test_deep_files",
        "test_diffscope",
        "test_docs",
        "test_feeds",
        "test_identities",
        "test_imports",
        "test_keras_generation",
        "test_layout",
        "test_made_up_constants",
        "test_numpy_abi",
        "test_proving_order",
        "test_report",
        "test_rules",
        "test_seccomp",
        "test_siblings",
        "test_standins",
        "test_static_precision",
        "test_supervisor",
        "test_suppression",
        "test_tiers",
        "test_trusted",
        "test_wrappers",
    ),
    "dynamic": (
        "test_bench_dynamic",
        "test_bench_static_torch",
        "test_catalogue",
        "test_cli",
        "test_cuda",
        "test_dependencies",
        "test_dynamic",
        "test_factories",
        "test_fix_report",
        "test_fix_stage",
        "test_fix_transforms",
        "test_fix_validate",
        "test_harness",
        "test_harvest_methods",
        "test_loading",
        "test_raised",
        "test_localise",
        "test_numerics_doc",
        "test_object_entries",
        "test_usage_entries",
        "test_pipeline",
        "test_precision",
        "test_precommit",
        "test_report_units",
        "test_reproducer_checks",
        "test_retired",
        "test_sandbox",
        "test_script_mode",
        "test_script_programs",
        "test_search_stages",
        "test_shape_repair",
        "test_sizes",
        "test_static_dtype",
        "test_warm_python",
        "test_weight_ranges",
    ),
    "tf": (
        "test_harvest_keras",
        "test_install",
        "test_keras_2",
        "test_localise_tf",
        "test_precision_tf",
        "test_script_mode_tf",
        "test_tf1_names",
    ),
    "jax": ("test_jax_dynamic", "test_linen", "test_numpy_dynamic"),
    "app": (
        "test_action",
        "test_app_delivery",
        "test_app_e2e",
        "test_app_outbox",
        "test_app_serve",
        "test_app_units",
        "test_app_web",
        "test_policy",
    ),
    "browser": ("test_report_pages",),
    "docker": ("test_docker_runner",),
    "lint": ("test_lint",),
}
TIER_OF = {module: tier for tier, modules in TIERS.items() for module in modules}


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): one worker more than the CPUs this process may use.
    A worker spends minutes waiting on processes that are not its own (the Docker engine
    building the runner image, Celery workers, Chromium, sandboxed jobs' start-up), and
    with one worker per CPU a CPU sits idle meanwhile (on one 2-core checkout the suite took
    11.6 min with two workers and 10.3-10.5 with three; fresh clones vary more than that)."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With `-m static` alone, files of other tiers are not imported (they need torch)."""
    if (
        config.option.markexpr.strip() == "static"
        and collection_path.suffix == ".py"
        and collection_path.stem.startswith("test_")
    ):
        return TIER_OF.get(collection_path.stem) != "static"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = TIER_OF.get(item.path.stem)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepoFactory:
    """Factory: `git_repo(main_files, feature_files)` commits `main_files` on `main`, then
    branches `feature` and, when given, commits `feature_files` there (None deletes a file).
    The repository is left on `feature`, as a PR checkout would be."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def make(
        main: Mapping[str, FileContent],
        feature: Mapping[str, FileContent] | None = None,
        *,
        name: str = "repo",
    ) -> GitRepo:
        repo = GitRepo(tmp_path / name)
        repo.commit(main, "base")
        repo.checkout("feature", create=True)
        if feature is not None:
            repo.commit(feature, "feature")
        return repo

    return make


@pytest.fixture
def clean_modules(tmp_path: Path) -> Iterator[None]:
    """Forget the test repository's packages (the top-level names in `tmp_path`) after a test
    that imported them in this process, and nothing else: dropping a library first imported
    during the test (torch's lazily loaded submodules) from `sys.modules` crashed the
    interpreter at the next garbage collection."""
    yield None
    roots = {p.stem for p in tmp_path.iterdir()}
    for name in [n for n in sys.modules if n.split(".")[0] in roots]:
        del sys.modules[name]


@pytest.fixture(scope="session")
def numcheck_exe() -> str:
    """The installed console script next to this interpreter (`.venv/bin/numcheck`)."""
    bindir = Path(sys.executable).parent
    exe = shutil.which("numcheck", path=str(bindir))
    if exe is None:
        pytest.fail(f"no numcheck console script in {bindir}; run ./scripts/setup --dev")
    return exe


RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli(numcheck_exe: str) -> RunCli:
    """Run the real `numcheck` executable; returns the completed process (text mode)."""

    def run(
        *args: str | os.PathLike[str],
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        env.pop("GIT_DIR", None)
        return subprocess.run(
            [numcheck_exe, *map(str, args)],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=timeout,
            check=False,
        )

    return run


MainResult = tuple[int, str, str]
RunMain = Callable[[Sequence[str | os.PathLike[str]]], MainResult]


@pytest.fixture
def run_main(capsys: pytest.CaptureFixture[str]) -> RunMain:
    """Call `bot.cli.main(argv)` in process; returns (exit status, stdout, stderr)."""

    def run(argv: Sequence[str | os.PathLike[str]]) -> MainResult:
        capsys.readouterr()  # drop anything printed before
        code = cli_main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run
