"""Files too deep for libcst: refused by an `ast` measure before libcst's native parser sees
them (a 10,000-operand `and` line used to kill the process with SIGSEGV, a 500-operand `+`
line to raise a KeyError out of libcst's position provider that ended the whole static pass).
Each is that file's error; the other files of the review are still analysed. The command
line runs in a subprocess, so a regression shows as exit status 139, not a dead test run."""

from __future__ import annotations

import ast
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepoFactory

from analyzers.static import scanner
from analyzers.static.bounds import MAX_CHAINED_COMPARISONS, MAX_NESTING_LEVELS, measure
from analyzers.static.scanner import scan_source

ROOT = Path(__file__).resolve().parent.parent
AND_LINE = "y = " + " and ".join(["x"] * 10_000) + "\n"  # 60 KB
PLUS_LINE = "y = " + " + ".join(["x"] * 500) + "\n"  # 2 KB
DEEP = f"import torch\n\n\ndef f(x):\n    {AND_LINE}    {PLUS_LINE}    return torch.log(y)\n"
PLUS_ONLY = f"import torch\n\n\ndef g(x):\n    {PLUS_LINE}    return torch.log(y)\n"
RISKY = "import torch\n\n\ndef loss(x):\n    return torch.log(x)\n"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m bot.cli` of this checkout, in a child process."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    env.pop("GIT_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )


def _errors(data: dict[str, Any]) -> dict[str, str]:
    return {e["path"]: e["message"] for e in data["errors"]}


def test_a_review_reports_the_deep_files_and_still_the_others(git_repo: GitRepoFactory) -> None:
    repo = git_repo(
        {"README.md": "x\n"}, {"deep.py": DEEP, "plus.py": PLUS_ONLY, "risky.py": RISKY}
    )
    proc = _cli(
        "review",
        str(repo.root),
        "--base",
        "main",
        "--head",
        "feature",
        "--static-only",
        "--format",
        "json",
        cwd=repo.root,
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])  # findings: 1
    data = json.loads(proc.stdout)
    assert [(f["path"], f["line"], f["op"]) for f in data["findings"]] == [("risky.py", 5, "log")]
    errors = _errors(data)
    assert set(errors) == {"deep.py", "plus.py"}
    assert "deep.py:5: too deeply nested for the static pass (10,00" in errors["deep.py"]
    assert f"the limit is {MAX_NESTING_LEVELS}" in errors["deep.py"]
    assert "10,000 `and` operands" in errors["deep.py"]
    assert "plus.py:5: too deeply nested for the static pass (50" in errors["plus.py"]
    assert "500 binary-operator operands" in errors["plus.py"]
    assert all(e["stage"] == "static" for e in data["errors"])
    assert data["files_analyzed"] == 1


def test_a_scan_exits_with_its_findings_status_not_139(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(DEEP, encoding="utf-8")
    (tmp_path / "risky.py").write_text(RISKY, encoding="utf-8")
    proc = _cli("scan", "--static-only", ".", cwd=tmp_path)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert "risky.py:5:" in proc.stdout and "too deeply nested" in proc.stdout


def _at(levels: int, source: str) -> int:
    return measure(ast.parse(source), source).levels - levels


@pytest.mark.parametrize(
    "expr, grows",
    [
        (" and ".join(["x"] * 400), 399),  # libcst nests n - 1 BooleanOperations
        (" + ".join(["x"] * 400), 399),
        ("x" + ".a" * 400, 400),
        ("'a' " * 400, 399),  # one ast Constant, 400 nested ConcatenatedStrings in libcst
        (" < ".join(["x"] * 400), 1),  # flat in both trees: one Compare above its operands
    ],
)
def test_the_measure_counts_libcst_levels(expr: str, grows: int) -> None:
    base = measure(ast.parse("y = x\n"), "y = x\n").levels
    source = f"y = {expr}\n"
    assert measure(ast.parse(source), source).levels == base + grows


def test_a_chain_within_the_limit_is_analysed(tmp_path: Path) -> None:
    chain = " + ".join(["x"] * (MAX_NESTING_LEVELS - 10))
    scan = scan_source(
        f"import torch\n\n\ndef f(x):\n    y = {chain}\n    return torch.log(y)\n", "ok.py"
    )
    assert scan.error is None and [f.op for f in scan.findings] == ["log"]
    over = " + ".join(["x"] * (MAX_NESTING_LEVELS + 10))
    assert "too deeply nested" in (scan_source(f"y = {over}\n", "no.py").error or "")
    compare = " < ".join(["x"] * (MAX_CHAINED_COMPARISONS + 1))
    error = scan_source(f"y = {compare}\n", "cmp.py").error or ""
    assert f"chains {MAX_CHAINED_COMPARISONS + 1} operands" in error


# Trees at the limit, of the kinds that cost libcst's parser the most stack per level.
AT_LIMIT = {
    "and": "y = " + " and ".join(["x"] * (MAX_NESTING_LEVELS - 2)),
    "attribute": "y = x" + ".a" * (MAX_NESTING_LEVELS - 3),
    "lambda": "y = " + "lambda: " * (MAX_NESTING_LEVELS - 3) + "x",
    "conditional": "y = " + "x if x else " * (MAX_NESTING_LEVELS - 3) + "x",
    "brackets": "y = " + "f(" * 190 + "x" + ")" * 190,
    # CPython's 100 indented blocks, 25 KiB of libcst's stack each, then brackets
    "blocks": "".join(" " * i + "if x:\n" for i in range(98))
    + " " * 98
    + "y = "
    + "f(" * (MAX_NESTING_LEVELS // 2 - 2)
    + "x"
    + ")" * (MAX_NESTING_LEVELS // 2 - 2),
}


@pytest.mark.parametrize("kind", sorted(AT_LIMIT))
def test_libcst_parses_the_deepest_admitted_trees_on_half_the_default_stack(kind: str) -> None:
    """The margin of the bound: the deepest trees it lets through parse inline (no thread of
    our own) in a process whose main thread has 4 MiB of stack, half of Linux's default."""
    source = AT_LIMIT[kind] + "\n"
    assert measure(ast.parse(source), source).refusal("t.py") is None

    def small_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (4 * 1024 * 1024, 4 * 1024 * 1024))

    proc = subprocess.run(
        [sys.executable, "-c", "import sys, libcst; libcst.parse_module(sys.stdin.read())"],
        input=source,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_stack,
        check=False,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])


def test_any_exception_out_of_one_file_is_that_files_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a node")

    monkeypatch.setattr(scanner.FunctionAnalyzer, "run_function", broken)
    scan = scan_source(RISKY, "risky.py")
    assert scan.findings == []
    assert scan.error == (
        "risky.py: the static pass failed on this file (KeyError: 'a node'); "
        "the other files were analysed"
    )

    class SoftTimeLimitExceeded(Exception):  # noqa: N818 - Celery's name, matched by name
        pass

    def interrupted(*args: object, **kwargs: object) -> None:
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(scanner.FunctionAnalyzer, "run_function", interrupted)
    with pytest.raises(SoftTimeLimitExceeded):  # a time limit ends the run, not one file
        scan_source(RISKY, "risky.py")
