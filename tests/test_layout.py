"""Where a checkout's packages live (analyzers/dynamic/layout.py): a `src/` layout's module
names, read from the folders and the packaging files without running anything.

Real libraries (torchmetrics among them) keep their package under `src/`; before this, the
dynamic pass named `src/torchmetrics/functional/x.py` as `src.torchmetrics.functional.x`, whose
own absolute imports then failed, and every such finding ended in `error`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analyzers.dynamic.layout import module_of, root_of, search_path, source_roots


def _tree(base: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text, encoding="utf-8")
    return base


def test_module_names_are_relative_to_the_source_root() -> None:
    assert module_of("pkg/sub/mod.py") == "pkg.sub.mod"
    assert module_of("pkg/__init__.py") == "pkg"
    assert module_of("src/tm/functional/iou.py", ("src",)) == "tm.functional.iou"
    assert module_of("src/tm/__init__.py", ("src",)) == "tm"
    assert module_of("tools/run.py", ("src",)) == "tools.run"  # outside the root: as before
    assert module_of("python/lib/x.py", ("python", "python/lib")) == "x"  # the deepest root
    assert module_of("srcx/pkg/m.py", ("src",)) == "srcx.pkg.m"  # a prefix of a name is not


def test_the_root_of_a_module_is_what_its_path_has_before_the_name() -> None:
    assert root_of("src/tm/functional/iou.py", "tm.functional.iou") == "src"
    assert root_of("pkg/mod.py", "pkg.mod") == ""
    assert root_of("src/tm/__init__.py", "tm") == "src"
    with pytest.raises(ValueError, match="is not the file of"):
        root_of("src/tm/iou.py", "other.iou")


def test_the_src_convention_needs_a_package_inside_and_no_package_itself(tmp_path: Path) -> None:
    layout = _tree(tmp_path / "a", {"src/tm/__init__.py": "", "src/tm/iou.py": ""})
    assert source_roots(layout) == ("src",)
    flat = _tree(tmp_path / "b", {"pkg/__init__.py": "", "src/notes.txt": ""})
    assert source_roots(flat) == ()  # a src folder without a package in it
    package = _tree(tmp_path / "c", {"src/__init__.py": "", "src/tm/__init__.py": ""})
    assert source_roots(package) == ()  # `src` is itself the package: `src.tm`


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", '[tool.setuptools]\npackage-dir = {"" = "lib"}\n'),
        ("pyproject.toml", '[tool.setuptools.packages.find]\nwhere = ["lib"]\n'),
        ("pyproject.toml", '[tool.poetry]\npackages = [{include = "tm", from = "lib"}]\n'),
        ("pyproject.toml", '[tool.hatch.build.targets.wheel]\npackages = ["lib/tm"]\n'),
        ("pyproject.toml", '[tool.pdm.build]\npackage-dir = "lib"\n'),
        ("setup.cfg", "[options]\npackage_dir =\n    =lib\n"),
        ("setup.cfg", "[options.packages.find]\nwhere = lib\n"),
        ("setup.py", 'from setuptools import setup\nsetup(name="tm", package_dir={"": "lib"})\n'),
        (
            "setup.py",
            'import setuptools\nsetuptools.setup(packages=setuptools.find_packages(where="lib"))\n',
        ),
        ("setup.py", 'from setuptools import find_packages\nfind_packages("lib")\n'),
    ],
)
def test_a_declared_source_folder_is_a_root(tmp_path: Path, name: str, text: str) -> None:
    repo = _tree(tmp_path, {name: text, "lib/tm/__init__.py": ""})
    assert source_roots(repo) == ("lib",)


def test_what_is_not_a_folder_of_the_checkout_is_never_a_root(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", {"tm/__init__.py": ""})
    repo = _tree(
        tmp_path / "repo",
        {
            "pyproject.toml": (
                '[tool.setuptools.packages.find]\nwhere = ["../outside", "/etc", '
                '".", "", "missing", "lib\\\\win", 3, "link", "lib/../lib"]\n'
            ),
            "lib/tm/__init__.py": "",
        },
    )
    os.symlink(outside, repo / "link")
    assert source_roots(repo) == ()


def test_broken_or_huge_packaging_files_are_ignored(tmp_path: Path) -> None:
    repo = _tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.setuptools\nwhere = ",
            "setup.cfg": "not an ini file [",
            "setup.py": "setup(package_dir={'': 'lib'}" + "(" * 200,
            "lib/tm/__init__.py": "",
            "src/sp/__init__.py": "",
        },
    )
    assert source_roots(repo) == ("src",)  # the convention still holds
    (repo / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = {"" = "lib"}\n' + "#" * (2 << 20), encoding="utf-8"
    )
    assert source_roots(repo) == ("src",)


def test_the_declared_roots_come_first_and_each_once(tmp_path: Path) -> None:
    repo = _tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["python", "src"]\n',
            "python/a/__init__.py": "",
            "src/b/__init__.py": "",
        },
    )
    assert source_roots(repo) == ("python", "src")
    root = str(repo.resolve())
    assert search_path(repo) == [root, os.path.join(root, "python"), os.path.join(root, "src")]
