"""The dynamic benchmark runs end to end on real cases (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.dynamic import main


def test_bench_confirms_buggy_cases_and_spares_fixed_twins(tmp_path: Path) -> None:
    out = tmp_path / "dynamic.json"
    code = main(
        [
            "-k",
            "p08_log_softmax_label_smoothing",
            "-k",
            "p03_tabular_standardize_std",
            "-k",
            "p02_ntxent_manual_normalize",
            "-k",
            "p05_trajectory_heading_atan2",
            "--budget",
            "1.5",
            "--json",
            str(out),
        ]
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["case"]: row for row in data["rows"]}
    assert set(rows) == {
        "p08_log_softmax_label_smoothing",
        "p03_tabular_standardize_std",
        "p02_ntxent_manual_normalize",
        "p05_trajectory_heading_atan2",
    }
    # atan2 just off the origin (both operands ~1e-20) used to be out of the search's reach
    assert all(row["confirmed"] for row in rows.values()), rows
    summary = data["summary"]
    assert summary["fixed_twins_confirmed"] == 0
    # the needle (a constant column) is out of reach of plain random sampling
    assert rows["p03_tabular_standardize_std"]["random_seconds"] is None
    assert "p03_tabular_standardize_std" in summary["solved_only_by_numcheck"]
    # p08 overflows on most uniform draws: it is in the ratios, with its draws counted
    assert rows["p08_log_softmax_label_smoothing"]["random_evaluations"] >= 1
    assert summary["speedup_vs_random"]["cases"] >= 1
    assert summary["speedup_vs_random"]["summed_time_ratio"] > 0
    assert summary["device"] == "cpu" and summary["devices_used"] == ["cpu"]
    assert code == 0


def test_every_case_has_a_bug_marker_and_an_entry() -> None:
    import tomllib

    cases = sorted((Path(__file__).parent.parent / "bench" / "cases").glob("*/case.toml"))
    assert len(cases) >= 40
    for case in cases:
        meta = tomllib.loads(case.read_text(encoding="utf-8"))
        assert "# numcheck-bug:" in (case.parent / "buggy.py").read_text(encoding="utf-8")
        assert (case.parent / "fixed.py").exists()
        assert meta["entry"]["target"].startswith("buggy:")
