"""Precision findings: finite in float32, NaN/Inf in float16 or bfloat16.

Two ways in (analyzers/dynamic/precision.py): a float32 entry whose search finds nothing is
searched again under autocast, and an entry configured in low precision gets its trigger
re-run in float32. Real PyTorch throughout, and the sandboxed harness through `analyze()`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from conftest import GitRepoFactory
from harness_support import run_script

from analyzers.config import Config, config_from_mapping
from analyzers.dynamic.entries import EntryConfig, build_configured
from analyzers.dynamic.precision import (
    declared_precisions,
    float32_verdict,
    mark_precision,
    precisions_to_try,
)
from analyzers.dynamic.reproducer import Target, render
from analyzers.model import AnalysisResult
from analyzers.report.summary import proof_sentence
from analyzers.static import scan_source
from runners.base import RunResult
from runners.pipeline import _merge, analyze

# log(sigmoid(a . b)) with inputs in [-1, 1] and 32 features: |a . b| <= 32, where float32's
# sigmoid is at least 1e-14 but float16's (the matmul's dtype under autocast) underflows.
HEADS = """\
import torch


def pair_log_likelihood(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    dots = a @ b.transpose(-2, -1)
    return torch.log(torch.sigmoid(dots))
"""
BOX = ["float32[4,32] in [-1, 1]", "float32[4,32] in [-1, 1]"]

# A LayerNorm whose epsilon is 0 in float16: a constant token divides 0 by sqrt(0).
NORMS = """\
import torch
from torch import nn


class TinyNorm(nn.Module):
    def __init__(self, eps: float = 1e-8) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True)
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(var + self.eps)


def log_of(x: torch.Tensor) -> torch.Tensor:
    return torch.log(x)
"""


def _config(**changes: object) -> Config:
    entry = {"target": "model.heads:pair_log_likelihood", "inputs": BOX}
    return dataclasses.replace(
        Config(), search_seconds=2.0, dynamic_timeout=300, entries=(entry,), **changes
    )


def _repo(git_repo: GitRepoFactory) -> Path:
    return git_repo(
        {"model/__init__.py": "", "model/heads.py": "import torch\n"}, {"model/heads.py": HEADS}
    ).root


def test_a_bug_only_float16_shows_is_confirmed_as_a_precision_finding(
    git_repo: GitRepoFactory,
) -> None:
    repo = _repo(git_repo)
    result = analyze(repo, "main", "feature", _config())
    (found,) = result.findings
    assert found.status == "confirmed", (found.error, found.trigger)
    assert found.trigger is not None
    assert found.trigger["precision"] == {
        "dtype": "float16",
        "mode": "autocast",
        "float32": "finite",
    }
    assert (
        "found under float16 autocast, and the same inputs are finite in float32"
        in proof_sentence(found)
    )
    # the reproducer checks float32 first, then fails under autocast
    reproducer = found.reproducer or ""
    assert reproducer.index("out32 = pair_log_likelihood(a32, b32)") < reproducer.index(
        'with torch.autocast("cpu", dtype=torch.float16):'
    )
    run = run_script(repo, reproducer, timeout=120)
    assert run.returncode != 0
    assert "in float32 too" not in run.stderr and "log at model/heads.py:6" in run.stderr
    # the fix stage checks the stable form under the same autocast
    assert found.fix is not None and found.fix["status"] == "validated", found.fix
    assert "logsigmoid" in found.fix["replacement"]


def test_without_low_precision_the_same_finding_is_not_triggered(git_repo: GitRepoFactory) -> None:
    result = analyze(_repo(git_repo), "main", "feature", _config(low_precision=False, fix=False))
    (found,) = result.findings
    assert found.status == "not-triggered"
    assert found.trigger is not None and "precision" not in found.trigger
    assert found.trigger["low_precision"] == [] and "mixed" not in proof_sentence(found)


def test_a_bug_no_precision_shows_says_what_was_searched(git_repo: GitRepoFactory) -> None:
    """`log(sigmoid(x))` of a bounded input: finite in every precision; the result says the
    low precisions were searched too, and counts their runs."""
    repo = git_repo(
        {"model/__init__.py": "", "model/heads.py": "import torch\n"},
        {
            "model/heads.py": "import torch\n\n\ndef smooth(x: torch.Tensor) -> "
            "torch.Tensor:\n    return torch.log(torch.sigmoid(torch.tanh(x)))\n"
        },
    )
    entry = {"target": "model.heads:smooth", "inputs": ["float32[4,8] in [-1, 1]"]}
    runs = {}
    for low in (True, False):
        result = analyze(
            repo.root,
            "main",
            "feature",
            dataclasses.replace(_config(fix=False, low_precision=low), entries=(entry,)),
        )
        (found,) = result.findings
        assert found.status == "not-triggered" and found.trigger is not None
        runs[low] = found.trigger["evaluations"]
        if low:
            assert found.trigger["low_precision"] == ["bfloat16", "float16"]
            assert "in float32 and in mixed bfloat16 and float16" in proof_sentence(found)
    assert runs[True] > runs[False] > 0  # the low precisions' runs are counted


@pytest.fixture
def norms(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "precnorms.py").write_text(NORMS, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("precnorms", None)
    while str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def test_a_model_cast_to_float16_is_rerun_in_float32_on_its_trigger(norms: Path) -> None:
    entry = build_configured(
        norms, EntryConfig("precnorms:TinyNorm", ("float16[2,16]",), {}, "float16", None), seed=0
    )
    constant = torch.ones(2, 16, dtype=torch.float16)  # var = 0, and 1e-8 is 0 in float16
    path, lines = str(norms / "precnorms.py"), frozenset({12})
    assert not torch.isfinite(entry.call([constant])).all()
    assert mark_precision(entry, path, lines, "div", [constant]) == {
        "dtype": "float16",
        "mode": "cast",
        "float32": "finite",
    }
    assert entry.float32_reference
    script = render(
        entry, [constant], Target("precnorms.py", 12, "div", "x / y", "forward", ""), seed=0
    )
    assert "model32 = copy.deepcopy(model).float()" in script and "import copy" in script
    assert script.index("out32 = model32(x32)") < script.index("out = model(x)")


def test_a_bug_float32_has_too_is_not_a_precision_finding(norms: Path) -> None:
    entry = build_configured(
        norms, EntryConfig("precnorms:log_of", ("float16[4]",), {}, "float16", None), seed=0
    )
    zero = torch.zeros(4, dtype=torch.float16)
    path, lines = str(norms / "precnorms.py"), frozenset({16})
    assert float32_verdict(entry, path, lines, "log", [zero]) == "fails"
    assert mark_precision(entry, path, lines, "log", [zero]) == {
        "dtype": "float16",
        "mode": "cast",
        "float32": "fails",
    }
    assert not entry.float32_reference


def test_a_float32_entry_has_no_differential(norms: Path) -> None:
    entry = build_configured(
        norms, EntryConfig("precnorms:log_of", ("float32[4]",), {}, None, None), seed=0
    )
    path = str(norms / "precnorms.py")
    assert mark_precision(entry, path, frozenset({16}), "log", [torch.zeros(4)]) is None


def test_the_precisions_a_repository_mentions_go_first(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "model = model.half()\nx = x.half()\ny = y.to(torch.bfloat16)\n", encoding="utf-8"
    )
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "lib.py").write_text("torch.bfloat16 " * 50, encoding="utf-8")
    assert declared_precisions(tmp_path) == ["float16", "bfloat16"]
    assert precisions_to_try(declared_precisions(tmp_path)) == ["float16", "bfloat16"]
    assert precisions_to_try([]) == ["bfloat16", "float16"]


def test_keras_policies_count_as_their_precisions(tmp_path: Path) -> None:
    """`mixed_bfloat16` names bfloat16 (the `_` before it is no word boundary), and a
    bfloat16 is never a float16."""
    (tmp_path / "train.py").write_text(
        'tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")\n'
        'policy = keras.mixed_precision.Policy("mixed_bfloat16")\n'
        "x = tf.cast(x, tf.float16)\n",
        encoding="utf-8",
    )
    assert declared_precisions(tmp_path) == ["bfloat16", "float16"]
    (tmp_path / "train.py").write_text("y = y.to(torch.bfloat16)\n", encoding="utf-8")
    declared_precisions.cache_clear()
    assert declared_precisions(tmp_path) == ["bfloat16"]


TRAIN = """\
import torch

torch.manual_seed(0)
a = torch.rand(4, 32)
b = torch.rand(4, 32)
for step in range(3):
    dots = a @ b.T
    loss = -torch.log(torch.sigmoid(dots)).mean()
    print(step, float(loss))
"""


def test_a_script_is_searched_again_with_its_whole_run_under_autocast(
    git_repo: GitRepoFactory,
) -> None:
    """The draws are held in [-1, 1] (a configured box, so not widened): float32 never
    saturates the sigmoid there, float16 autocast does; the reproducer runs the script under
    the same autocast."""
    repo = git_repo({"train.py": "import torch\n"}, {"train.py": TRAIN}).root
    config = config_from_mapping(
        {
            "search_seconds": 2.0,
            "harvest": False,
            "fix": False,
            "script": {"command": "python train.py", "bounds": {"random": [-1, 1]}},
        },
        "test",
    )
    result = analyze(repo, "main", "feature", config)
    (found,) = [f for f in result.findings if f.line == 8]
    assert found.status == "confirmed", (found.error, found.trigger)
    assert found.trigger is not None and found.trigger["box"]["source"] == "script"
    assert found.trigger["precision"] == {
        "dtype": "float16",
        "mode": "autocast",
        "float32": "finite",
    }
    reproducer = found.reproducer or ""
    assert 'with torch.autocast("cpu", dtype=torch.float16):' in reproducer
    run = run_script(repo, reproducer, timeout=120)
    assert run.returncode != 0 and "train.py:8" in run.stderr, run.stderr[-2000:]


def test_a_failed_precision_search_leaves_the_float32_verdict_and_says_why() -> None:
    (finding,) = scan_source(HEADS, "model/heads.py").findings
    fingerprint = finding.fingerprint
    box = {"source": "config", "target": "model.heads:pair_log_likelihood", "inputs": []}
    first = {
        "fingerprint": fingerprint,
        "status": "not-triggered",
        "box": box,
        "trigger": {"seconds": 2.0, "evaluations": 40, "low_precision": []},
    }
    failed = {
        "fingerprint": fingerprint,
        "stage": "precision",
        "status": "error",
        "error": "timeout: the code did not finish within 9 s",
    }
    analysis = AnalysisResult(".", None, None, {}, findings=[finding])
    _merge(analysis, RunResult("ok", [first, failed]), {})
    assert finding.status == "not-triggered" and finding.trigger is not None
    assert finding.trigger["evaluations"] == 40
    assert finding.error == (
        "the mixed-precision search did not finish: timeout: the code did not finish within 9 s"
    )
