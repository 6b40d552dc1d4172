"""ruff (lint and format) and mypy run as part of the test command, so "lint clean" is
checked, not promised.

They use their configuration in pyproject.toml and run from the repository root, exactly as
`.venv/bin/ruff check .`, `.venv/bin/ruff format --check .` and `.venv/bin/mypy` do by hand.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_tool(module: str, *args: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed; run ./scripts/setup --dev")
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        pytest.fail(f"{module} {' '.join(args)} exited {proc.returncode}:\n{output}", pytrace=False)


def test_ruff() -> None:
    run_tool("ruff", "check", "--no-cache", ".")


def test_ruff_format() -> None:
    """The code is formatted as `ruff format` writes it (the bench cases, inputs the
    benchmarks read line by line, are excluded in pyproject.toml)."""
    run_tool("ruff", "format", "--check", "--no-cache", ".")


def test_mypy() -> None:
    run_tool("mypy")
