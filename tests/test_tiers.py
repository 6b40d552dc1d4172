"""Every test file is in exactly one tier (tests/conftest.py TIERS), so `pytest -m static`
and the other markers select what they say, and a new file cannot fall outside them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from conftest import TIERS

HERE = Path(__file__).resolve().parent


def test_every_test_file_has_exactly_one_tier() -> None:
    files = {p.stem for p in HERE.glob("test_*.py")}
    listed = Counter(module for modules in TIERS.values() for module in modules)
    assert sorted(files - set(listed)) == [], "add these files to a tier in conftest.TIERS"
    assert sorted(set(listed) - files) == [], "these tier entries name no file"
    assert [m for m, n in listed.items() if n > 1] == []
