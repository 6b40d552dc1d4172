"""A repository's declared dependencies (tests/test_declared.py) installed from wheels into
a cached folder with real pip against an index on disk (`runners/dependencies.py`), and
imported by the sandboxed run (`runners.pipeline.analyze`)."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import GitRepoFactory
from dependency_support import dated_index, make_sdist, make_wheel
from packaging.version import Version

from analyzers.config import Config
from runners.dependencies import DependencyError, DependencySettings, prepare
from runners.pipeline import analyze, commit_time
from runners.release_dates import capped, release_for

# ---------------------------------------------------------------- installing them


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """An index on disk: tinydep (needs tinybase), tinybase, needsoldnumpy (needs numpy<1),
    and evilsrc, a source archive only, whose setup.py would write a marker."""
    folder = tmp_path / "index"
    make_wheel(
        folder,
        "tinydep",
        "1.2",
        {"tinydep/__init__.py": "from tinybase import BASE\nSCALE = BASE * 2.0\n"},
        requires=["tinybase>=1"],
    )
    make_wheel(folder, "tinybase", "1.0", {"tinybase/__init__.py": "BASE = 0.5\n"})
    make_wheel(
        folder, "needsoldnumpy", "1.0", {"needsoldnumpy/__init__.py": ""}, requires=["numpy<1"]
    )
    make_wheel(folder, "typing", "3.7.4.3", {"typing.py": "raise ImportError('backport')\n"})
    make_sdist(
        folder,
        "evilsrc",
        "1.0",
        f"open({str(tmp_path / 'built')!r}, 'w').close()\n"
        "from setuptools import setup\nsetup(name='evilsrc', version='1.0')\n",
    )
    return folder


def settings(tmp_path: Path, index: Path, **changes: object) -> DependencySettings:
    return DependencySettings(cache=tmp_path / "cache", index=str(index), seconds=120, **changes)  # type: ignore[arg-type]


def test_declared_wheels_are_installed_once_and_cached(tmp_path: Path, index: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text("tinydep>=1\nnumpy<1.0\ntyping\n")
    env = prepare(checkout, settings=settings(tmp_path, index))
    assert env.installed == ("tinybase==1.0", "tinydep==1.2", "typing==3.7.4.3")
    assert env.provided == ("numpy",)  # numcheck's own numpy is never replaced
    assert env.failed == () and not env.cached
    assert env.site is not None and (env.site / "tinydep" / "__init__.py").is_file()
    assert not (env.site / "numpy").exists()
    assert not (env.site / "typing.py").exists()  # never in place of the standard library's
    again = prepare(checkout, settings=settings(tmp_path, index))
    assert again.cached and again.site == env.site and again.installed == env.installed
    assert again.seconds < env.seconds


def test_what_cannot_come_from_a_wheel_is_named_and_never_built(
    tmp_path: Path, index: Path
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text("tinydep\nevilsrc\nneedsoldnumpy\nnosuchpkg\n")
    env = prepare(checkout, settings=settings(tmp_path, index))
    assert not (tmp_path / "built").exists()  # the source archive's setup.py never ran
    failed = dict(env.failed)
    assert set(failed) == {"evilsrc", "needsoldnumpy", "nosuchpkg"}
    assert "evilsrc" in failed["evilsrc"] and "nosuchpkg" in failed["nosuchpkg"]
    assert "numpy" in failed["needsoldnumpy"]  # held to numcheck's numpy: a conflict
    assert env.installed == ("tinybase==1.0", "tinydep==1.2")  # the rest still comes
    assert "could not be installed from wheels: " in env.failed_sentence()


def test_an_old_commit_gets_the_releases_current_on_its_day(tmp_path: Path) -> None:
    """An unbounded requirement resolves to the release of the commit's day (release_dates.py):
    old code against today's release is what broke allennlp's and diffusers' imports. A
    release of then with no wheel here gives way to the first one with a wheel, and a pin
    decides for itself."""
    folder = tmp_path / "dated"
    make_wheel(folder, "datedlib", "1.0", {"datedlib/__init__.py": "API = 1\n"})
    make_wheel(folder, "datedlib", "2.0", {"datedlib/__init__.py": "API = 2\n"})
    make_sdist(folder, "laterwheel", "1.0", "raise SystemExit('never built')\n")
    make_wheel(folder, "laterwheel", "1.5", {"laterwheel/__init__.py": ""})
    make_wheel(folder, "laterwheel", "2.0", {"laterwheel/__init__.py": ""})
    uploaded = {
        "datedlib-1.0-py3-none-any.whl": "2018-05-01T10:00:00.000000Z",
        "datedlib-2.0-py3-none-any.whl": "2024-01-01T10:00:00.000000Z",
        "laterwheel-1.0.tar.gz": "2018-05-01T10:00:00Z",
        "laterwheel-1.5-py3-none-any.whl": "2020-02-01T10:00:00Z",
        "laterwheel-2.0-py3-none-any.whl": "2024-01-01T10:00:00Z",
    }
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text("datedlib\nlaterwheel\n")
    then = datetime(2019, 3, 1, tzinfo=UTC)
    with dated_index(folder, uploaded) as url:
        dated = DependencySettings(cache=tmp_path / "cache", index=url, seconds=120)
        old = prepare(checkout, settings=dated, as_of=then)
        # laterwheel had only a source archive then: the first release with a wheel after it
        assert old.installed == ("datedlib==1.0", "laterwheel==1.5") and old.failed == ()
        assert prepare(checkout, settings=dated).installed == ("datedlib==2.0", "laterwheel==2.0")
        assert capped(
            ["datedlib", "datedlib==2.0", "datedlib<0.5"], url, then, time.monotonic() + 60
        ) == {"datedlib": "datedlib<=1.0"}
        assert release_for(url, "laterwheel", then, time.monotonic() + 60) == Version("1.5")
        assert release_for(url, "nosuchpkg", then, time.monotonic() + 60) is None
    # a folder of wheels cannot say when a file was uploaded: nothing is capped
    plain = prepare(checkout, settings=settings(tmp_path / "plain", folder), as_of=then)
    assert plain.installed == ("datedlib==2.0", "laterwheel==2.0")


def test_a_package_built_on_a_framework_is_not_held_to_the_commits_day(tmp_path: Path) -> None:
    """A declared package that depends on one of numcheck's frameworks (torch here) was built
    against that day's framework, not the installed one (optax's 2021 chex fails at import on
    today's jax): it is freed of the date cap; the others keep theirs."""
    folder = tmp_path / "dated"
    make_wheel(folder, "datedlib", "1.0", {"datedlib/__init__.py": "API = 1\n"})
    make_wheel(folder, "datedlib", "2.0", {"datedlib/__init__.py": "API = 2\n"})
    for version in ("1.0", "2.0"):
        make_wheel(folder, "ontorch", version, {"ontorch/__init__.py": ""}, requires=["torch"])
    uploaded = {
        "datedlib-1.0-py3-none-any.whl": "2018-05-01T10:00:00Z",
        "datedlib-2.0-py3-none-any.whl": "2024-01-01T10:00:00Z",
        "ontorch-1.0-py3-none-any.whl": "2018-05-01T10:00:00Z",
        "ontorch-2.0-py3-none-any.whl": "2024-01-01T10:00:00Z",
    }
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text("datedlib\nontorch\n")
    with dated_index(folder, uploaded) as url:
        dated = DependencySettings(cache=tmp_path / "cache", index=url, seconds=120)
        old = prepare(checkout, settings=dated, as_of=datetime(2019, 3, 1, tzinfo=UTC))
    assert old.installed == ("datedlib==1.0", "ontorch==2.0") and old.failed == ()


def test_the_project_itself_is_never_installed_over_the_checkout(
    tmp_path: Path, index: Path
) -> None:
    """tinydep needs tinybase, and the checkout is tinybase: the PR's code must be imported,
    not a release of it that a dependency pulled in (a test extra's flax pulls in optax)."""
    checkout = tmp_path / "checkout"
    (checkout / "tinybase").mkdir(parents=True)
    (checkout / "tinybase" / "__init__.py").write_text("BASE = 3.0\n")
    (checkout / "requirements.txt").write_text("tinydep\n")
    env = prepare(checkout, settings=settings(tmp_path, index))
    assert env.site is not None and (env.site / "tinydep").is_dir()
    assert not (env.site / "tinybase").exists()  # under another name than the project's
    (checkout / "pyproject.toml").write_text('[project]\nname = "tinybase"\n')
    named = prepare(checkout, settings=settings(tmp_path / "again", index))
    assert named.installed == ("tinydep==1.2",)


def test_a_script_folder_gets_what_it_imports_less_what_numcheck_has(
    tmp_path: Path, index: Path
) -> None:
    """Nothing declared: the imports are the requirements, less what numcheck's interpreter
    imports already: torch, typing_extensions (its distribution's name), markdown_it (from
    markdown-it-py, a name the import does not spell). A name the index lacks is named, not
    fatal."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "train.py").write_text(
        "import torch\nimport tinydep\nimport nosuchpkg\n"
        "import typing_extensions\nimport markdown_it\n"
    )
    env = prepare(checkout, settings=settings(tmp_path, index))
    assert env.installed == ("tinybase==1.0", "tinydep==1.2")
    assert {"typing-extensions", "markdown-it"} <= set(env.provided)
    assert set(dict(env.failed)) == {"nosuchpkg"}


# pkg_resources as setuptools 80 ships it: it puts setuptools/_vendor on sys.path itself
PKG_RESOURCES = """\
import os
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(__file__)), "setuptools", "_vendor"))
from vendored_text import yield_lines  # noqa: E402
"""


def test_a_module_that_left_the_environment_comes_from_its_last_release(
    tmp_path: Path, index: Path
) -> None:
    """The checkout imports pkg_resources, which numcheck's setuptools (81 and later) lacks:
    setuptools<81 is resolved apart from the interpreter's own setuptools, and only what
    pkg_resources needs stays: the interpreter's `import setuptools` is never replaced."""
    import subprocess
    import sys

    from runners.dependencies import importable_names

    make_wheel(
        index,
        "setuptools",
        "80.0",
        {
            "pkg_resources/__init__.py": PKG_RESOURCES,
            "setuptools/__init__.py": "raise ImportError('an old setuptools stood in')\n",
            "setuptools/_vendor/vendored_text.py": "def yield_lines(text):\n    return [text]\n",
            "_distutils_hack/__init__.py": "",
        },
    )
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text("tinydep\n")
    (checkout / "imports.py").write_text("import pkg_resources\n")
    env = prepare(checkout, settings=settings(tmp_path, index))
    if "pkg_resources" in importable_names(sys.executable):  # an older setuptools here
        assert env.installed == ("tinybase==1.0", "tinydep==1.2")
        assert "setuptools" in env.provided
        return
    assert env.installed == ("setuptools==80.0", "tinybase==1.0", "tinydep==1.2")
    assert env.site is not None and (env.site / "pkg_resources").is_dir()
    assert sorted(p.name for p in (env.site / "setuptools").iterdir()) == ["_vendor"]
    assert not (env.site / "_distutils_hack").exists()
    probe = (
        "import sys; sys.path.append(sys.argv[1]); import pkg_resources; "
        "print(pkg_resources.yield_lines('ok')); import setuptools; "
        "print(getattr(setuptools, '__file__', None) or 'namespace')"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(env.site)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.split("\n")
    assert said[0] == "['ok']" and str(env.site) not in said[1], done.stdout


def test_nothing_declared_or_switched_off_installs_nothing(tmp_path: Path, index: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    assert prepare(checkout, settings=settings(tmp_path, index)).site is None
    (checkout / "requirements.txt").write_text("tinydep\n")
    off = settings(tmp_path, index, enabled=False)
    assert prepare(checkout, settings=off).site is None
    assert not (tmp_path / "cache").exists()


def test_a_cache_others_can_write_is_refused(tmp_path: Path, index: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text("tinydep\n")
    (tmp_path / "cache").mkdir(mode=0o777)
    os.chmod(tmp_path / "cache", 0o777)
    with pytest.raises(DependencyError, match="writable by no one else"):
        prepare(checkout, settings=settings(tmp_path, index))


def test_operator_settings_come_from_the_environment(tmp_path: Path) -> None:
    read = DependencySettings.from_env(
        {
            "NUMCHECK_DEPENDENCIES": "off",
            "NUMCHECK_DEPENDENCY_CACHE": str(tmp_path),
            "NUMCHECK_PACKAGE_INDEX": "https://pypi.example/simple",
            "NUMCHECK_DEPENDENCY_SECONDS": "30",
        }
    )
    assert not read.enabled and read.cache == tmp_path and read.seconds == 30
    assert read.index_args() == ["--index-url", "https://pypi.example/simple"]
    assert DependencySettings(index=str(tmp_path)).index_args() == [
        "--no-index",
        "--find-links",
        str(tmp_path.resolve()),
    ]
    with pytest.raises(DependencyError, match="install or off"):
        DependencySettings.from_env({"NUMCHECK_DEPENDENCIES": "maybe"})


# ---------------------------------------------------------------- the sandboxed run imports them

MODEL = """\
import torch
import tinydep

try:  # the job must not be able to change what every later job imports
    with open(tinydep.__file__, "a") as handle:
        handle.write("TAMPERED = True\\n")
except OSError:
    pass


def scaled_log(x: torch.Tensor) -> torch.Tensor:
    return torch.log(x) * tinydep.SCALE
"""


def test_a_finding_behind_a_declared_import_is_confirmed(
    git_repo: GitRepoFactory, tmp_path: Path, index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_repo(
        {"requirements.txt": "tinydep\n", "model.py": "import torch\n"}, {"model.py": MODEL}
    )
    monkeypatch.setenv("NUMCHECK_PACKAGE_INDEX", str(index))
    monkeypatch.setenv("NUMCHECK_DEPENDENCY_CACHE", str(tmp_path / "cache"))
    config = Config(search_seconds=2.0, fix=False, harvest=False, dynamic_timeout=240)
    result = analyze(repo.root, "main", "feature", config)
    [finding] = result.findings
    assert finding.status == "confirmed", (finding.error, result.errors)
    assert "dependencies" in result.timings
    [installed] = (tmp_path / "cache").glob("*/site/tinydep/__init__.py")
    assert "TAMPERED" not in installed.read_text()  # read-only for the job

    off = analyze(
        repo.root,
        "main",
        "feature",
        Config(
            search_seconds=2.0, fix=False, harvest=False, dynamic_timeout=240, dependencies=False
        ),
    )
    assert off.findings[0].status == "error"
    assert "tinydep" in (off.findings[0].error or "")


def test_an_import_that_could_not_be_installed_names_why(
    git_repo: GitRepoFactory, tmp_path: Path, index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = MODEL.replace("tinydep", "nosuchpkg")
    repo = git_repo(
        {"requirements.txt": "nosuchpkg\n", "model.py": "import torch\n"}, {"model.py": model}
    )
    monkeypatch.setenv("NUMCHECK_PACKAGE_INDEX", str(index))
    monkeypatch.setenv("NUMCHECK_DEPENDENCY_CACHE", str(tmp_path / "cache"))
    result = analyze(
        repo.root,
        "main",
        "feature",
        Config(search_seconds=1.0, fix=False, harvest=False, dynamic_timeout=240),
    )
    [finding] = result.findings
    assert finding.status == "error"
    assert "No module named 'nosuchpkg'" in (finding.error or "")
    assert "could not be installed from wheels: nosuchpkg" in (finding.error or "")
    stage = [e for e in result.errors if e.stage == "dependencies"]
    assert stage and "nosuchpkg" in stage[0].message
    assert json.dumps(result.to_json())  # still a plain result


def test_the_dependency_step_is_dated_by_the_reviewed_commit(
    git_repo: GitRepoFactory, tmp_path: Path
) -> None:
    """`runners.pipeline.commit_time`: the committer's time of the head, with its offset; a
    ref that looks like an option is a ref (`--end-of-options`), never an option of git."""
    repo = git_repo({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    stamp = repo.git("log", "-1", "--format=%ct", "feature").strip()
    when = commit_time(repo.root, "feature")
    assert when is not None and when.tzinfo is not None
    assert int(when.timestamp()) == int(stamp)
    trap = tmp_path / "written"
    assert commit_time(repo.root, f"--output={trap}") is None and not trap.exists()
    assert commit_time(repo.root, "no-such-branch") is None
