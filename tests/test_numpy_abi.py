"""Wheels compiled against NumPy 1 (runners/numpy_abi.py): found by reading their extension
files, never by importing them, and removed with every folder they leave empty, so an
optional `import pandas` fails with ImportError instead of breaking what imports it."""

from __future__ import annotations

from pathlib import Path

from runners.numpy_abi import NEW_NAME, OLD_NAME, numpy_1_builds, remove


def _install(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """A distribution as pip's `--target` leaves it: its files and a RECORD listing them."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    rows = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        rows.append(f"{rel},,")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    # built against NumPy 1: the old module name only (pandas 1.5.0's extensions)
    _install(
        site,
        "pandas",
        "1.5.0",
        {
            "pandas/__init__.py": b"",
            "pandas/_libs/interval.cpython-311-x86_64-linux-gnu.so": b"\x7fELF.." + OLD_NAME,
        },
    )
    # built against NumPy 2: the new name first, the old as its fallback (today's scipy)
    _install(
        site,
        "scipy",
        "1.14.0",
        {"scipy/_lib/_ccallback.so": b"\x7fELF" + NEW_NAME + b"\x00" + OLD_NAME},
    )
    _install(site, "pytz", "2024.1", {"pytz/__init__.py": b"utc = None\n"})  # no extension
    # a namespace folder another distribution shares
    _install(site, "oldext", "0.1", {"common/oldext/_c.so": OLD_NAME})
    _install(site, "newer", "1.0", {"common/newer/__init__.py": b""})
    return site


def test_only_numpy_1_builds_are_named_and_only_beside_numpy_2(tmp_path: Path) -> None:
    site = _site(tmp_path)
    found = numpy_1_builds(site, "2.1.3")
    assert sorted(found) == ["oldext", "pandas"]
    assert site / "pandas" / "__init__.py" in found["pandas"]
    assert numpy_1_builds(site, "1.26.4") == {}  # NumPy 1 loads them
    assert numpy_1_builds(site, None) == {}
    assert numpy_1_builds(site, "not a version") == {}


def test_removal_takes_the_distribution_and_the_folders_it_leaves_empty(tmp_path: Path) -> None:
    site = _site(tmp_path)
    for files in numpy_1_builds(site, "2.1.3").values():
        remove(site, files)
    assert not (site / "pandas").exists()  # no empty folder left to import as a namespace
    assert not (site / "pandas-1.5.0.dist-info").exists()
    assert not (site / "common" / "oldext").exists()
    assert (site / "common" / "newer" / "__init__.py").is_file()  # the common folder's other
    assert (site / "scipy" / "_lib" / "_ccallback.so").is_file()
    assert (site / "pytz" / "__init__.py").is_file()


def test_a_record_naming_files_outside_the_folder_is_not_followed(tmp_path: Path) -> None:
    """A RECORD is the wheel's own text: a path out of the folder is never read or removed."""
    site = tmp_path / "site"
    outside = tmp_path / "precious.so"
    outside.write_bytes(OLD_NAME)
    _install(site, "evil", "1.0", {"evil/_c.so": b"plain"})
    record = site / "evil-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "../precious.so,,\n", encoding="utf-8")
    assert numpy_1_builds(site, "2.0.0") == {}  # its own extension is not an old build
    _install(site, "evil2", "1.0", {"evil2/_c.so": OLD_NAME})
    record = site / "evil2-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "../precious.so,,\n", encoding="utf-8")
    found = numpy_1_builds(site, "2.0.0")
    remove(site, found["evil2"])
    assert outside.is_file() and not (site / "evil2").exists()
