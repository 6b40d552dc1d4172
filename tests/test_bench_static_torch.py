"""`bench.static_torch` end to end on a tiny tree: the JSON must add up.

No timing assertions: only that every phase ran and the bookkeeping is consistent, so the
benchmark cannot silently report a ratio over the wrong files or lose parse errors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.static_torch import count_lines, main, sample_files  # noqa: E402

RISKY = """\
import torch


def entropy(x):
    return -(x * torch.log(x)).sum()
"""

SAFE = """\
def add(a, b):
    return a + b


class Box:
    def size(self):
        return 3
"""

BROKEN = """\
def broken(:
    return 1
"""


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "pkg").mkdir(parents=True)
    (root / "a_risky.py").write_text(RISKY, encoding="utf-8")
    (root / "pkg" / "b_safe.py").write_text(SAFE, encoding="utf-8")
    (root / "c_broken.py").write_text(BROKEN, encoding="utf-8")
    (root / "d_latin1.py").write_bytes(b"# caf\xe9\nx = 1\n")  # not UTF-8: skipped
    (root / "notes.txt").write_text("not python\n", encoding="utf-8")
    return root


def run_bench(tree: Path, tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "out" / "bench.json"
    argv = ["--root", str(tree), "--sample-every", "1", "--repeat", "2", "--json", str(out), *extra]
    assert main(argv) == 0
    return json.loads(out.read_text(encoding="utf-8")), str(out)


def test_metrics_are_consistent(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = run_bench(tree, tmp_path)
    printed = capsys.readouterr().out

    lines = count_lines(RISKY) + count_lines(SAFE) + count_lines(BROKEN)
    assert data["files"] == 3
    assert data["lines"] == lines
    assert data["not_utf8"] == ["d_latin1.py"]

    # sample-every 1: the sample is the whole corpus, for both passes
    for key in ("numcheck_whole", "numcheck_sample", "naive_sample"):
        assert data[key]["files"] == 3
        assert data[key]["lines"] == lines
        assert data[key]["median_s"] > 0
    assert len(data["numcheck_whole"]["runs_s"]) == 2
    assert len(data["naive_sample"]["runs_s"]) == 1

    assert data["parse_errors"] == 1
    assert data["errors"][0]["path"] == "c_broken.py"
    assert data["naive_parse_errors"] == 1

    for key in ("ratio_sample", "ratio_whole_vs_sample_naive"):
        assert isinstance(data[key], float)
        assert data[key] > 0

    logs = [f for f in data["findings"] if f["op"] == "log"]
    assert logs and logs[0]["path"] == "a_risky.py" and logs[0]["line"] == 5
    assert all(f["path"] == "a_risky.py" for f in data["findings"])
    assert data["findings_total"] == len(data["findings"])
    assert data["findings_per_kloc"] == pytest.approx(1000 * len(data["findings"]) / lines)
    assert sum(d["count"] for d in data["by_op"]) == data["findings_total"]
    assert sum(d["count"] for d in data["by_rule"]) == data["findings_total"]
    assert sum(d["pct"] for d in data["by_op"]) == pytest.approx(100.0)

    assert len(data["sample"]) == data["findings_total"]  # fewer findings than K=30
    first = data["sample"][0]
    assert {"path", "line", "op", "rule", "call", "why", "context"} <= set(first)
    assert [first["line"], RISKY.splitlines()[first["line"] - 1]] in first["context"]

    assert "numcheck / naive = " in printed
    assert "a_risky.py:5" in printed


def test_findings_sample_is_seeded(tree: Path, tmp_path: Path) -> None:
    (tree / "more.py").write_text(
        "import torch\n\n\ndef f(x, y):\n"
        + "".join(f"    a{i} = torch.sqrt(x) / y + torch.log(y)\n" for i in range(8))
        + "    return a0\n",
        encoding="utf-8",
    )
    first, _ = run_bench(tree, tmp_path, "--findings-sample", "4", "--seed", "7")
    again, _ = run_bench(tree, tmp_path, "--findings-sample", "4", "--seed", "7")
    assert first["findings_total"] > 4
    assert len(first["sample"]) == 4
    pick = [(f["path"], f["line"], f["op"]) for f in first["sample"]]
    assert pick == [(f["path"], f["line"], f["op"]) for f in again["sample"]]


def test_sample_every_takes_every_nth_sorted_file() -> None:
    from bench.static_torch import Source

    files = [Source(f"f{i:02d}.py", "", 0) for i in range(25)]
    assert [s.path for s in sample_files(files, 10)] == ["f00.py", "f10.py", "f20.py"]
    assert sample_files(files, 0) == files


def test_analyser_crash_costs_one_file(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzers.static

    real = analyzers.static.scan_source

    def flaky(source: str, path: str, *args: Any, **kwargs: Any) -> Any:
        if path == "pkg/b_safe.py":
            raise NameError("boom")
        return real(source, path, *args, **kwargs)

    monkeypatch.setattr(analyzers.static, "scan_source", flaky)
    data, _ = run_bench(tree, tmp_path)
    assert data["crashes"] == [{"path": "pkg/b_safe.py", "error": "NameError: boom"}]
    assert any(f["op"] == "log" for f in data["findings"])
