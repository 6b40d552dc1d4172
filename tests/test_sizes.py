"""A divisor made of the input's sizes (sizes.py): values drawn in a box of fixed shapes
never move `n - 1`, so the search is flat; the call is searched again at smaller sizes, and
the proof's box states the shapes it needed.

The real harness in a child process (the local runner), real torch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from harness_support import confirmed_reproducer, run_findings, write_repo  # noqa: E402

from analyzers.dynamic.entry import Entry  # noqa: E402
from analyzers.dynamic.sizes import resized  # noqa: E402
from analyzers.dynamic.specs import InputSpec  # noqa: E402
from analyzers.report.summary import proof_sentence  # noqa: E402
from analyzers.static import scan_source  # noqa: E402

SPREAD = """\
import torch


def column_mean(x):
    n = x.shape[0]
    return x.sum(dim=0) / torch.tensor(n - 1, dtype=x.dtype)
"""


def test_a_divisor_made_of_sizes_is_proven_at_the_size_that_makes_it_zero(
    tmp_path: Path,
) -> None:
    """At the default [4, 8] the divisor is 3 whatever the values, at [2, 2] it is 1, at
    [1, 1] it is 0: the proof and its reproducer use the last."""
    repo = write_repo(tmp_path, {"stats/__init__.py": "", "stats/spread.py": SPREAD})
    run = run_findings(
        repo,
        "stats/spread.py",
        ["column_mean"],
        finding_timeout=60,
        timeout=180,
        search_seconds=1.0,
        harvest=False,
        fix=False,
    )
    record = run.record("column_mean")
    assert record["status"] == "confirmed", record
    assert [(spec["shape"], spec["source"]) for spec in record["box"]["inputs"]] == [
        ([1, 1], "resized")
    ]
    confirmed_reproducer(repo, run)
    (finding,) = scan_source(SPREAD, "stats/spread.py").findings
    finding.status = "confirmed"
    finding.trigger = {**record["trigger"], "box": record["box"]}
    assert "float32[1, 1] in [-100, 100] (sizes cut:" in proof_sentence(finding)


def _entry(*specs: InputSpec) -> Entry:
    return Entry("m:f", list(specs), lambda *xs: xs, "synthesised")


def test_only_synthesised_boxes_shrink() -> None:
    """A recorded call's shapes are the tests' own; a configured box is the repository's."""
    default = InputSpec("float32", (4, 8), -100.0, 100.0, "default")
    observed = InputSpec("float32", (4, 8), -1.0, 1.0, "observed")
    configured = InputSpec("float32", (4, 8), -1.0, 1.0, "config")
    smaller = resized(_entry(default, observed, configured), 2)
    assert smaller is not None
    assert [spec.shape for spec in smaller.specs] == [(2, 2), (4, 8), (4, 8)]
    assert [spec.source for spec in smaller.specs] == ["resized", "observed", "config"]
    assert resized(_entry(observed, configured), 2) is None
    assert resized(_entry(InputSpec("float32", (1, 2), -1.0, 1.0, "default")), 2) is None
