"""Files a module imports by their bare names from its own folder (siblings.py): which
folder, and which folders a plan may put on a reproducer's sys.path."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzers.dynamic.siblings import checked_dir, sibling_folder


def _raised_in(path: Path) -> BaseException:
    """The error a checkout file's bare import raises, with that file in its traceback."""
    try:
        exec(compile(path.read_text(), str(path), "exec"), {})  # noqa: S102 - the fixture
    except ImportError as exc:
        return exc
    raise AssertionError("the fixture imported")


def test_the_folder_beside_the_failing_import_holds_the_module(tmp_path: Path) -> None:
    losses = tmp_path / "pkg" / "losses"
    losses.mkdir(parents=True)
    (losses / "numcheck_absent_ce.py").write_text("X = 1\n")
    (losses / "focal.py").write_text("from numcheck_absent_ce import X\n")
    (losses / "numcheck_absent_pkg").mkdir()
    (losses / "numcheck_absent_pkg" / "__init__.py").write_text("")
    exc = _raised_in(losses / "focal.py")
    assert sibling_folder("numcheck_absent_ce", exc, tmp_path) == "pkg/losses"
    assert sibling_folder("numcheck_absent_pkg", exc, tmp_path) == "pkg/losses"
    assert sibling_folder("numcheck_absent_other", exc, tmp_path) is None  # not beside it
    assert sibling_folder("numcheck_absent_ce.sub", exc, tmp_path) is None  # a dotted name
    assert sibling_folder("numcheck_absent_ce", ImportError("no traceback"), tmp_path) is None


def test_the_checkouts_root_is_never_a_sibling_folder(tmp_path: Path) -> None:
    (tmp_path / "numcheck_absent_ce.py").write_text("X = 1\n")
    (tmp_path / "run.py").write_text("from numcheck_absent_ce import X\n")
    assert sibling_folder("numcheck_absent_ce", _raised_in(tmp_path / "run.py"), tmp_path) is None


def test_a_file_that_imports_its_own_name_wants_the_library_not_itself(tmp_path: Path) -> None:
    """allennlp's `common/tqdm.py` wraps the tqdm library with `from tqdm import tqdm`: with
    tqdm missing, its own folder on sys.path would make the file import itself."""
    common = tmp_path / "pkg" / "common"
    common.mkdir(parents=True)
    (common / "numcheck_absent_bar.py").write_text("from numcheck_absent_bar import bar\n")
    exc = _raised_in(common / "numcheck_absent_bar.py")
    assert sibling_folder("numcheck_absent_bar", exc, tmp_path) is None
    (common / "files.py").write_text("from numcheck_absent_bar import bar\n")
    exc = _raised_in(common / "files.py")  # another file of the folder: the sibling it means
    assert sibling_folder("numcheck_absent_bar", exc, tmp_path) == "pkg/common"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("optax/losses", True),
        ("src/pkg-1/x.y", True),
        ("a", True),
        ("/etc", False),
        ("../up", False),
        ("a/../b", False),
        ("a//b", False),
        ("./a", False),
        ("a/", False),
        ("", False),
        ("a\\b", False),
        ("a;b", False),
        ("a\nb", False),
        (3, False),
        ("x" * 201, False),
    ],
)
def test_a_plans_folder_is_a_clean_relative_path(value: object, ok: bool) -> None:
    assert (checked_dir(value) == value) is ok
