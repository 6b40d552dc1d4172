"""Weight ranges (`weights` in an entries table): a module's parameters searched as inputs.

The bug below is out of reach of the inputs while the module keeps its initial weights (a
scale of 1 keeps the log's argument >= 1); a scale trained below zero makes it NaN. The
harness runs twice in a real child process (the real local runner), with and without the
weight box; the rest runs in process.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from harness_support import run_script, with_reproducers

from analyzers.config import ConfigError, config_from_mapping, load_config
from analyzers.dynamic.entries import EntryConfig, EntryError, build_configured
from analyzers.report.summary import proof_sentence
from analyzers.static import scan_source
from runners.harness import normal_inputs
from runners.local import LocalRunner, RunResult

PACKAGE = "weightmods"
NET = """\
import torch
from torch import nn


class Energy(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        return torch.log(self.scale * (h * h).sum(-1) + 1.0)  # @energy


def energy(x: torch.Tensor) -> torch.Tensor:
    return torch.log(x.abs().sum(-1))
"""
ENTRY = f'''\
[[tool.numcheck.entries]]
target = "{PACKAGE}.net:Energy"
init = {{ features = 8 }}
inputs = ["float32[4,8] in [-10, 10]"]
'''
WEIGHTS = 'weights = { scale = "in [-1, 1]", "*" = "in [-1, 1]" }\n'


@dataclass
class Runs:
    repo: Path
    weighted: dict[str, Any]
    fix: dict[str, Any]
    plain: dict[str, Any]


def write_repo(repo: Path) -> None:
    (repo / PACKAGE).mkdir(parents=True, exist_ok=True)
    (repo / PACKAGE / "__init__.py").write_text("", encoding="utf-8")
    (repo / PACKAGE / "net.py").write_text(NET, encoding="utf-8")


def harness(repo: Path, config: str) -> RunResult:
    """The config as the pipeline passes it: loaded, then its entries in the job."""
    (repo / ".numcheck.toml").write_text(config, encoding="utf-8")
    entries = [dict(e) for e in load_config(repo).entries]
    scan = scan_source(NET, f"{PACKAGE}/net.py")
    findings = [f.to_json() for f in scan.findings if f.function == "Energy.forward"]
    assert len(findings) == 1, scan
    job = {
        "repo": str(repo),
        "findings": findings,
        "entries": entries,
        "seed": 0,
        "harvest": False,
        "search_seconds": 2.0,
        "finding_timeout": 60.0,
        "fix": "weights" in config,
    }
    result = with_reproducers(LocalRunner().run(job, timeout=120), findings)
    assert result.outcome == "ok", (result.reason, result.stderr[-2000:])
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    repo = tmp_path_factory.mktemp("weight-ranges") / "repo"
    write_repo(repo)
    weighted = harness(repo, ENTRY + WEIGHTS).records
    plain = harness(repo, ENTRY).records
    (confirmed,) = [r for r in weighted if "status" in r]
    (fix,) = [r["fix"] for r in weighted if r.get("stage") == "fix"]
    # not triggered in float32, the finding is searched again in low precision: that
    # record (stage "precision") is the verdict the host keeps
    first, second = [r for r in plain if "status" in r]
    assert first["status"] == "not-triggered" and second["stage"] == "precision", plain
    return Runs(repo, confirmed, fix, second)


def test_a_bug_only_a_weight_reaches_is_confirmed_inside_the_weight_box(runs: Runs) -> None:
    record = runs.weighted
    assert record["status"] == "confirmed", record
    inputs = record["box"]["inputs"]
    assert inputs[0] == {
        "dtype": "float32",
        "shape": [4, 8],
        "lo": -10.0,
        "hi": 10.0,
        "source": "config",
    }
    # the parameters, in named_parameters() order, after the call's input
    assert [box.get("weight") for box in inputs] == [None, "scale", "proj.weight", "proj.bias"]
    assert inputs[1] == {
        "dtype": "float32",
        "shape": [],
        "lo": -1.0,
        "hi": 1.0,
        "source": "config",
        "weight": "scale",
    }
    assert inputs[2]["shape"] == [8, 8] and inputs[2]["source"] == "config"
    scale = record["trigger"]["inputs"][1]
    assert scale["shape"] == [] and -1.0 <= scale["values"] < 0.0  # in the box, and below 0


def test_the_proof_names_the_weight_boxes(runs: Runs) -> None:
    (finding,) = [
        f for f in scan_source(NET, f"{PACKAGE}/net.py").findings if f.function == "Energy.forward"
    ]
    finding.status = "confirmed"  # as runners.pipeline merges the harness record
    finding.trigger = {**runs.weighted["trigger"], "box": runs.weighted["box"]}
    sentence = proof_sentence(finding)
    assert (
        f"of {PACKAGE}.net:Energy (config entry), inputs in float32[4, 8] in [-10, 10]; "
        "weight scale float32[] in [-1, 1]; weight proj.weight float32[8, 8] in [-1, 1]" in sentence
    ), sentence


def test_without_weights_the_same_entry_is_not_confirmed(runs: Runs) -> None:
    assert runs.plain["status"] == "not-triggered", runs.plain
    assert [box.get("weight") for box in runs.plain["box"]["inputs"]] == [None]


def test_the_reproducer_sets_only_the_weight_that_matters(runs: Runs) -> None:
    script = runs.weighted["reproducer"]
    assert "model = Energy(features=8)" in script
    assert "with torch.no_grad():" in script
    assert "model.get_parameter('scale').copy_(w_scale)" in script
    # minimised toward the module's own values: the other weights stay as constructed
    assert "proj.weight" not in script and "proj.bias" not in script
    assert "out = model(x)" in script  # called on the call's inputs only


def test_the_reproducer_fails_standalone_and_only_because_of_the_weights(runs: Runs) -> None:
    script = runs.weighted["reproducer"]
    failed = run_script(runs.repo, script)
    assert failed.returncode != 0 and "AssertionError" in failed.stderr, failed.stderr[-2000:]
    without = script.replace("with torch.no_grad():", "if False:")
    assert without != script
    passed = run_script(runs.repo, without)
    assert passed.returncode == 0, passed.stderr[-2000:]


def test_a_fix_validates_on_an_entry_with_weights(runs: Runs) -> None:
    assert runs.fix["status"] == "validated", runs.fix
    checks = {c["name"]: c for c in runs.fix["validation"]["checks"]}
    assert checks["reproducer"]["passed"] and checks["search"]["passed"]
    assert checks["equivalence"]["passed"] and checks["equivalence"]["figures"]["inputs"] > 0


# ---------------------------------------------------------------------------- in process


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    write_repo(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # build_configured adds the repo
    yield tmp_path
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]


def build(repo: Path, target: str, weights: Any) -> Any:
    return build_configured(
        repo,
        EntryConfig(
            target,
            ("float32[4,8] in [-10, 10]",),
            {"features": 8} if "Energy" in target else {},
            weights=weights,
        ),
        seed=0,
    )


def test_weights_start_from_the_initialised_module_and_feed_the_normal_inputs(repo: Path) -> None:
    entry = build(repo, f"{PACKAGE}.net:Energy", "in [-0.5, 2]")
    assert entry.weights == ("scale", "proj.weight", "proj.bias")
    assert [s.shape for s in entry.specs] == [(4, 8), (), (8, 8), (8,)]
    assert entry.start is not None and float(entry.start[1]) == 1.0  # the real model
    assert torch.equal(entry.start[2], entry.fn.proj.weight.detach())
    out = entry.call([entry.start[0], torch.tensor(-1.0), *entry.start[2:]])
    assert bool(torch.isnan(out).any())  # the weight inputs, not the module's own, ran
    assert float(entry.fn.scale.detach()) == 1.0  # the module keeps its own
    normal = normal_inputs(entry, seed=0)
    assert normal and all(float(sample[1]) == 1.0 for sample in normal[:8])


def test_an_unknown_parameter_name_lists_the_names_that_exist(repo: Path) -> None:
    with pytest.raises(
        EntryError,
        match=re.escape(
            "weights names 'temperature', which is not a float parameter of the module; "
            "its float parameters are: scale, proj.weight, proj.bias"
        ),
    ):
        build(repo, f"{PACKAGE}.net:Energy", {"temperature": "in [0, 10]"})


def test_weights_on_a_plain_function_are_refused(repo: Path) -> None:
    with pytest.raises(
        EntryError,
        match="`weights` needs a target that is an nn.Module class .* this one is a function",
    ):
        build(repo, f"{PACKAGE}.net:energy", "in [-1, 1]")


def test_both_forms_load_and_reach_the_job_as_written(tmp_path: Path) -> None:
    (tmp_path / ".numcheck.toml").write_text(
        ENTRY + WEIGHTS + ENTRY + 'weights = "in [-1, 1]"\n', encoding="utf-8"
    )
    first, second = load_config(tmp_path).to_json()["entries"]
    assert first["weights"] == {"scale": "in [-1, 1]", "*": "in [-1, 1]"}
    assert second["weights"] == "in [-1, 1]"
    assert config_from_mapping({"entries": [{"target": "m:C"}]}).entries[0]["weights"] is None


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("'[-1, 1]'", "cannot read weights = '[-1, 1]'; write it as \"in [lo, hi]\""),
        ("{ scale = [0, 1] }", 'cannot read weights.scale = [0, 1]; write it as "in [lo, hi]"'),
        ("'in [2, 1]'", "empty box in weights = 'in [2, 1]': 2 > 1"),
        ("'in [0, inf]'", "the box of weights = 'in [0, inf]' must be finite"),
        ("'in [a, 1]'", "cannot read the bounds of weights = 'in [a, 1]'; write numbers"),
        ("{}", "weights must be a box or a table of boxes, got {}"),
        ("3", "weights must be a box or a table of boxes, got 3"),
    ],
)
def test_malformed_weights_are_clear_config_errors(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / ".numcheck.toml").write_text(ENTRY + f"weights = {toml}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    where = "entries[0] in [tool.numcheck] of .numcheck.toml: "
    assert str(info.value).startswith(where), info.value
    assert message in str(info.value)
    if "write it as" in message or "got" in message:  # the accepted forms, spelled out
        assert 'weights = "in [-1, 1]" (every float parameter) or weights = { temperature' in str(
            info.value
        )
