"""The order the sandbox tries a pull request's findings in (analyzers/trust.proving_order):
the code under review first, candidates next, test files last, files taking turns."""

from __future__ import annotations

from pathlib import Path

from analyzers.config import Config
from analyzers.model import Finding
from analyzers.static import scan_source
from analyzers.trust import proving_order
from runners.pipeline import _job

LOGS = (
    "import torch\n\ndef f(x, y, z):\n    a = torch.log(x)\n    b = torch.sqrt(y)\n"
    "    return a + b + torch.acos(z)\n"
)
ONE = "import torch\n\ndef g(x):\n    return torch.log(x)\n"
CANDIDATE = "def scale(x, width):\n    return x * 2.0 / (width - 1.0)\n"


def _found(source: str, path: str) -> list[Finding]:
    return scan_source(source, path).findings


def test_the_code_under_review_comes_first_then_candidates_then_tests() -> None:
    long_file = _found(LOGS, "pkg/a_long.py")
    other = _found(ONE, "pkg/b_other.py")
    candidate = _found(CANDIDATE, "pkg/c_scale.py")
    in_test = _found(LOGS, "tests/test_a.py")
    assert (len(long_file), len(other), len(candidate), len(in_test)) == (3, 1, 1, 3)
    assert candidate[0].rule == "unknown-operand"
    diff_order = in_test + long_file + candidate + other  # tests/ sorts first in a diff
    ordered = proving_order(diff_order)
    assert [(f.path, f.line, f.column) for f in ordered] == [
        (f.path, f.line, f.column)
        for f in (
            long_file[0],
            other[0],  # its file's turn comes before the long file's second finding
            long_file[1],
            long_file[2],
            candidate[0],
            *in_test,
        )
    ]
    assert sorted(map(id, ordered)) == sorted(map(id, diff_order))  # none lost, none twice
    assert proving_order([]) == []


def test_the_sandboxs_job_lists_the_findings_in_that_order(tmp_path: Path) -> None:
    findings = _found(LOGS, "tests/test_a.py") + _found(LOGS, "pkg/model.py")
    job = _job(tmp_path, findings, Config())
    assert [f["path"] for f in job["findings"]] == ["pkg/model.py"] * 3 + ["tests/test_a.py"] * 3
