"""What a repository declares it needs, read without running any of its code
(`runners/declared.py`): the input of the per-repository environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.declared import NOT_FROM_THE_INDEX, declared_requirements

# ---------------------------------------------------------------- what is declared


def test_each_declaration_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "mylib"\ndependencies = ["einops>=0.6", "numpy"]\n'
        '[project.optional-dependencies]\ntest = ["pytest-mock"]\ndocs = ["sphinx"]\n'
    )
    (tmp_path / "setup.cfg").write_text(
        "[metadata]\nname = mylib\n[options]\ninstall_requires =\n    chex\n    decorator\n"
    )
    (tmp_path / "requirements.txt").write_text("tqdm  # progress bars\n\n# a comment\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "test.txt").write_text("graphviz==0.20\n")
    (tmp_path / "requirements" / "docs.txt").write_text("sphinx\n")
    (tmp_path / "requirements-jax-cuda.txt").write_text("jax[cuda12]\n")
    declared = declared_requirements(tmp_path)
    assert [text for text, _ in declared.requirements] == [
        "einops>=0.6",
        "numpy",
        "pytest-mock",
        "chex",
        "decorator",
        "graphviz==0.20",
        "tqdm",
    ]
    assert dict(declared.requirements)["chex"] == "setup.cfg"
    assert dict(declared.requirements)["graphviz==0.20"] == "requirements/test.txt"
    assert "sphinx" not in declared.names()  # only the test extras


def test_setup_py_is_read_as_a_literal_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "setup.py").write_text(
        "import os\n"
        f"open({str(marker)!r}, 'w').close()\n"
        '_jax = ">=0.4.14"\n'
        'BASE = ["tqdm", f"jax{_jax}"]\n'
        "setup(name='numpyro', install_requires=BASE + ['multipledispatch', compute()],\n"
        "      extras_require={'test': ['pyro-api>=0.1.1'], 'doc': ['sphinx']})\n"
    )
    declared = declared_requirements(tmp_path)
    assert not marker.exists()
    # the list with a call in it is not a literal: nothing of it is guessed
    assert [text for text, _ in declared.requirements] == ["pyro-api>=0.1.1"]
    (tmp_path / "setup.py").write_text(
        '_jax = ">=0.4.14"\nBASE = ["tqdm", f"jax{_jax}"]\n'
        "setup(name='numpyro', install_requires=BASE + ['numpyro', 'multipledispatch'])\n"
    )
    declared = declared_requirements(tmp_path)
    assert [text for text, _ in declared.requirements] == [
        "tqdm",
        "jax>=0.4.14",
        "multipledispatch",
    ]
    assert declared.project_names == {"numpyro"}  # the checkout is the project


def test_what_could_fetch_from_elsewhere_is_refused_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(
        "-e .\n--index-url https://evil.example/simple\n-r other.txt\n"
        "mypkg @ git+https://evil.example/mypkg.git\n./vendor/pkg\nok-pkg<2\n"
    )
    (tmp_path / "other.txt").write_text("never-read\n")
    declared = declared_requirements(tmp_path)
    assert [text for text, _ in declared.requirements] == ["ok-pkg<2"]
    reasons = {line: why for line, _, why in declared.rejected}
    assert "pip options" in reasons["--index-url https://evil.example/simple"]
    assert "URL or path" in reasons["mypkg @ git+https://evil.example/mypkg.git"]
    assert "not a plain requirement" in reasons["./vendor/pkg"]
    assert "-r other.txt" in reasons


def test_poetry_dependencies_become_requirements(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry]\nname = "x"\n[tool.poetry.dependencies]\npython = "^3.9"\n'
        'einops = "^0.6"\nrich = "*"\nattrs = {version = "~23.1"}\n'
        'mine = {git = "https://evil.example/mine.git"}\n'
    )
    declared = declared_requirements(tmp_path)
    assert [text for text, _ in declared.requirements] == ["einops>=0.6", "rich", "attrs>=23.1"]
    assert [(line, why) for line, _, why in declared.rejected] == [
        ("mine (a git, path or URL source)", NOT_FROM_THE_INDEX)
    ]


# ---------------------------------------------------------------- nothing declared: imports


def test_a_checkout_that_declares_nothing_gets_what_its_files_import(tmp_path: Path) -> None:
    (tmp_path / "tutorial").mkdir()
    (tmp_path / "tutorial" / "train.py").write_text(
        "import os, json\nimport numpy as np\nimport torch.nn as nn\n"
        "import matplotlib.pyplot as plt\nfrom sklearn.metrics import f1_score\n"
        "import myutil\nfrom helpers.io import load\nfrom . import sibling\n"
        "from google.protobuf import text_format\n"
    )
    (tmp_path / "tutorial" / "myutil.py").write_text("import tqdm\nimport matplotlib\n")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "io.py").write_text("def load(): ...\n")
    (tmp_path / "broken.py").write_text("def (:\n")  # unreadable: skipped, not fatal
    declared = declared_requirements(tmp_path)
    assert dict(declared.requirements) == {
        "matplotlib": "import matplotlib in tutorial/myutil.py",  # files in path order
        "scikit-learn": "import sklearn in tutorial/train.py",
        "tqdm": "import tqdm in tutorial/myutil.py",
    }
    assert declared.imported == {
        "matplotlib": "matplotlib",
        "scikit-learn": "sklearn",
        "tqdm": "tqdm",
    }


def test_the_projects_own_imports_come_before_its_examples_and_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """diffusers' setup.py builds its requirements in code, so its imports stand in; read in
    path order, examples/ and scripts/ filled the list (gym, t5x, d4rl) and the library's own
    huggingface_hub was never tried in the step's time."""
    import runners.declared

    for rel, text in {
        "examples/rl/train.py": "import gym\n",
        "scripts/convert.py": "import t5x\n",
        "src/pkg/hub.py": "import huggingface_hub\n",
        "tests/test_hub.py": "import parameterized\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    declared = declared_requirements(tmp_path)
    assert [text for text, _ in declared.requirements] == [
        "huggingface_hub",
        "gym",
        "t5x",
        "parameterized",
    ]
    monkeypatch.setattr(runners.declared, "MAX_SCANNED", 1)
    assert dict(declared_requirements(tmp_path).requirements) == {
        "huggingface_hub": "import huggingface_hub in src/pkg/hub.py"
    }


def test_imports_are_not_read_when_anything_is_declared(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import matplotlib\nimport tqdm\n")
    (tmp_path / "requirements.txt").write_text("tqdm\n")
    declared = declared_requirements(tmp_path)
    assert declared.requirements == [("tqdm", "requirements.txt")]
    assert declared.imported == {}


def test_a_module_environments_once_provided_is_asked_for_whatever_is_declared(
    tmp_path: Path,
) -> None:
    """torchmetrics' `utilities/imports.py` imports pkg_resources, which left setuptools in
    release 81: the checkout gets the last release that had it, declared or not."""
    (tmp_path / "src" / "tm").mkdir(parents=True)
    (tmp_path / "src" / "tm" / "imports.py").write_text(
        "from pkg_resources import DistributionNotFound, get_distribution\n"
    )
    (tmp_path / "requirements.txt").write_text("tqdm\n")
    declared = declared_requirements(tmp_path)
    assert declared.requirements == [
        ("tqdm", "requirements.txt"),
        ("setuptools<81", "import pkg_resources in src/tm/imports.py"),
    ]
    assert declared.provides == {"setuptools<81": "pkg_resources"} and declared.imported == {}
    (tmp_path / "requirements.txt").unlink()  # nothing declared: the same, once
    declared = declared_requirements(tmp_path)
    assert declared.requirements == [("setuptools<81", "import pkg_resources in src/tm/imports.py")]
    (tmp_path / "src" / "tm" / "imports.py").write_text("import importlib.metadata\n")
    assert declared_requirements(tmp_path).provides == {}


@pytest.mark.parametrize(
    ("why", "named"),
    [
        # allennlp's requirements.txt, resolved against today's index
        (
            "Could not find a version that satisfies the requirement jsonnet==0.10.0; "
            'sys_platform != "win32" (from the requirements (line 3)) (from versions: 0.21.0)',
            ['jsonnet==0.10.0; sys_platform != "win32"'],
        ),
        (
            "Could not find a version that satisfies the requirement jsondiff==1.1.1 (from moto) "
            "(from versions: 2.0.0, 2.1.1)",
            ["moto==1.3.4"],
        ),
        (
            "conflicts with numcheck's environment: awscli 1.15.85 depends on PyYAML<=3.13 and "
            ">=3.10; numcheck's environment has PyYAML==6.0.2",
            ["awscli<=1.15.85,>=1.11.91"],
        ),
        ("No matching distribution found for overrides", ["overrides"]),
        ("pip did not finish within the dependency step's time limit", []),
    ],
)
def test_the_requirement_pip_fails_on_is_set_aside(why: str, named: list[str]) -> None:
    from runners.dependencies import culprits

    wanted = [
        'jsonnet==0.10.0; sys_platform != "win32"',
        "moto==1.3.4",
        "awscli<=1.15.85,>=1.11.91",
        "overrides",
        "pyyaml",
    ]
    assert culprits(why, wanted) == named


def test_setting_aside_leaves_time_to_try_the_rest_one_by_one_and_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each round of setting aside resolves the whole set again: diffusers' rounds took over
    two minutes each and, one culprit a round, used the whole step, so the package its code
    needs (huggingface_hub) was never tried. Rounds stop at 40 % of the time, the rest go one
    by one until 75 %, and each pip call is bounded by its phase's end (the install gets the
    rest)."""
    import runners.dependencies as dependencies
    from runners.dependencies import DependencySettings

    clock = [0.0]
    tried: list[list[str]] = []
    bounds: list[float] = []

    def dry_run(python, wanted, constraints, settings, work, deadline):  # type: ignore[no-untyped-def]
        tried.append(list(wanted))
        bounds.append(deadline)
        clock[0] += 100.0 if len(wanted) > 1 else 5.0  # a whole-set round is slow
        bad = [text for text in wanted if text.startswith("bad")]
        if bad:
            return None, f"Could not find a version that satisfies the requirement {bad[0]}"
        return [f"{text}==1.0" for text in wanted], ""

    class FakeTime:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

    monkeypatch.setattr(dependencies, "_dry_run", dry_run)
    monkeypatch.setattr(dependencies, "time", FakeTime)
    wanted = ["bad1", "bad2", "bad3", "bad4", "bad5", "hub"]
    pins, failed = dependencies._resolve(
        "python", wanted, {}, DependencySettings(), tmp_path, deadline=300.0
    )
    assert pins == ["hub==1.0"], (tried, failed)
    assert [len(t) for t in tried[:2]] == [6, 5] and all(len(t) == 1 for t in tried[2:])
    assert {text for text, _ in failed} == {"bad1", "bad2", "bad3", "bad4", "bad5"}
    assert bounds[:2] == [120.0, 120.0] and set(bounds[2:]) == {225.0}
    # one by one stops at 75 %: what is left then is said to be untried
    clock[0], tried[:] = 0.0, []
    pins, failed = dependencies._resolve(
        "python",
        ["bad1", "bad2", *[f"bad{i}x" for i in range(30)], "hub"],
        {},
        DependencySettings(),
        tmp_path,
        deadline=300.0,
    )
    assert pins == [] and clock[0] <= 230.0
    assert ("hub", "not tried: the dependency step ran out of time or turns") in failed
