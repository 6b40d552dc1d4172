"""Stand-ins for modules a repository imports and this environment lacks (standins.py): what
they stand in for, how they behave, and that the reproducer's copy of them runs alone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from analyzers.dynamic.loading import import_lines
from analyzers.dynamic.standins import install, missing_module, source_lines, stood_in


@pytest.fixture
def restored_meta_path() -> Iterator[None]:
    """Each test's stand-ins go with it: the finder is removed from this process after."""
    before = list(sys.meta_path)
    yield
    sys.meta_path[:] = before
    for name in [n for n in sys.modules if n.startswith("numcheck_absent")]:
        del sys.modules[name]


def _raised_or_none(source: str) -> BaseException | None:
    try:
        exec(source, {})  # noqa: S102 - a fixed import statement
    except Exception as exc:  # noqa: BLE001 - the exception is what is tested
        return exc
    return None


def _raised(source: str) -> BaseException:
    exc = _raised_or_none(source)
    assert exc is not None, f"{source!r} did not raise"
    return exc


def test_missing_modules_are_read_off_the_import_errors(
    tmp_path: Path, restored_meta_path: None
) -> None:
    assert (
        missing_module(_raised("import numcheck_absent_pkg.sub"), tmp_path) == "numcheck_absent_pkg"
    )
    assert (
        missing_module(_raised("from packaging import no_such_helper"), tmp_path)
        == "packaging.no_such_helper"
    )
    assert missing_module(ValueError("not an import"), tmp_path) is None


def test_the_checkouts_own_modules_are_never_stood_in_for(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "losses.py").write_text("x = 1\n")
    error = ImportError("cannot import name 'losses' from 'mypkg' (unknown location)")
    assert missing_module(error, tmp_path) is None
    built = ImportError(
        "cannot import name 'libfft' from partially initialized module "
        "'mypkg' (most likely due to a circular import)"
    )
    assert missing_module(built, tmp_path) == "mypkg.libfft"  # a build step's, not on disk


def test_a_stand_in_module_loads_subclasses_decorates_and_makes_no_numbers(
    restored_meta_path: None,
) -> None:
    install(["numcheck_absent_lib"])
    import numcheck_absent_lib.layers as layers  # type: ignore[import-not-found]
    from numcheck_absent_lib import register  # type: ignore[import-not-found]

    class Embedder(layers.Base):  # type: ignore[misc,name-defined]
        def __init__(self, scale: float) -> None:
            super().__init__(scale)
            self.scale = scale

    @register("embedder")  # type: ignore[untyped-decorator]
    def double(x: float) -> float:
        return 2 * x

    assert Embedder(3.0).scale == 3.0 and double(2.0) == 4.0
    assert "numcheck_absent_lib" in stood_in()
    with pytest.raises(TypeError):
        layers.Base() + 1.0  # computing with a stand-in fails, as the import would have


def test_the_reproducers_copy_runs_alone(tmp_path: Path) -> None:
    (tmp_path / "usespkg.py").write_text("import numcheck_absent_x\n\n\ndef f():\n    return 1.0\n")
    script = "\n".join(
        [
            *import_lines(
                "usespkg", "f", "import", "ModuleNotFoundError: x", stand_ins=["numcheck_absent_x"]
            ),
            "assert f() == 1.0",
            "print('ran')",
            "",
        ]
    )
    assert (
        "numcheck stood in for the modules the code imports and this environment cannot: "
        "numcheck_absent_x." in script
    )
    reproducer = tmp_path / "repro.py"  # saved at the checkout's root, as reproducers are
    reproducer.write_text(script, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(reproducer)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ran", proc.stderr[-2000:]
    assert len(source_lines()) > 20


def test_an_installed_library_that_raises_while_importing_is_stood_in_for(
    tmp_path: Path, restored_meta_path: None
) -> None:
    """timm imports a torchvision whose compiled ops do not load: the library raises
    while importing itself, wherever it is installed (here a dependency folder)."""
    libs, repo = tmp_path / "deps" / "site", tmp_path / "repo"
    (libs / "numcheck_absent_vision").mkdir(parents=True)
    (libs / "numcheck_absent_vision" / "__init__.py").write_text(
        "raise RuntimeError('operator numcheck_absent_vision::nms does not exist')\n"
    )
    (repo / "models").mkdir(parents=True)
    (repo / "models" / "layers.py").write_text("import numcheck_absent_vision\n")
    sys.path[:0] = [str(libs), str(repo)]
    try:
        error = _raised("import models.layers")
        assert missing_module(error, repo) == "numcheck_absent_vision"
        install(["numcheck_absent_vision"])
        assert _raised_or_none("import models.layers") is None
    finally:
        sys.path.remove(str(libs))
        sys.path.remove(str(repo))
        for name in [n for n in sys.modules if n.startswith("models")]:
            del sys.modules[name]


def test_never_the_standard_library_nor_a_frameworks_own_package(tmp_path: Path) -> None:
    assert missing_module(_raised("from json import no_such_helper"), tmp_path) is None
    error = RuntimeError("raised while importing")
    assert missing_module(error, tmp_path) is None  # no library frame: nothing to name


def test_a_missing_module_is_read_off_another_processs_traceback(tmp_path: Path) -> None:
    """A reproducer's fresh process may miss what the search's did not: its traceback's last
    import error names the module, held to the same rules as an exception's."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "losses.py").write_text("x = 1\n")
    from analyzers.dynamic.standins import missing_in_traceback

    built = (
        'Traceback (most recent call last):\n  File "r.py", line 9, in <module>\n'
        "ImportError: cannot import name 'libfft' from partially initialized module "
        "'mypkg' (most likely due to a circular import) (/x/mypkg/__init__.py)\n"
    )
    assert missing_in_traceback(built, tmp_path) == "mypkg.libfft"
    assert (
        missing_in_traceback("ModuleNotFoundError: No module named 'spacy.lang'\n", tmp_path)
        == "spacy.lang"
    )
    own = "ImportError: cannot import name 'losses' from 'mypkg' (unknown location)\n"
    assert missing_in_traceback(own, tmp_path) is None  # the checkout's own file
    assert (
        missing_in_traceback("ModuleNotFoundError: No module named 'torch'\n", tmp_path) is None
    )  # a framework never
    assert (
        missing_in_traceback("ModuleNotFoundError: No module named 'json.x'\n", tmp_path) is None
    )  # nor the standard library
    assert missing_in_traceback("AssertionError: the op is NaN\n", tmp_path) is None
