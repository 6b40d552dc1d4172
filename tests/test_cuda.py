"""The CUDA path of the dynamic pass.

CI has no GPU, so the tests that need one skip there and run where torch sees CUDA (the
project's GPU machine, see README "Devices"). The tests that run everywhere check that asking
for CUDA without one is a clear error, never a CPU run labelled "cuda".
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from analyzers.dynamic.entries import (
    EntryConfig,
    EntryError,
    build_configured,
    resolve_device,
)
from analyzers.dynamic.search import Budget, Searcher

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")

MODULE = textwrap.dedent("""\
    import torch


    class Scorer(torch.nn.Module):
        def __init__(self, features=8):
            super().__init__()
            self.linear = torch.nn.Linear(features, features)

        def forward(self, x):
            h = self.linear(x)
            probs = torch.softmax(h, dim=-1)
            return -torch.log(probs).mean()


    class Normaliser(torch.nn.Module):
        def __init__(self, features=8):
            super().__init__()
            self.linear = torch.nn.Linear(features, features)
            with torch.no_grad():
                self.linear.weight.copy_(torch.eye(features))
                self.linear.bias.zero_()

        def forward(self, x):
            h = self.linear(x)
            scale = h.abs().amax(-1, keepdim=True)
            return h / (scale + 1e-8)
    """)


def _write(tmp_path: Path) -> Path:
    """A fresh copy per test: forget the last test's `cudapkg`, or the entry would run the
    code of another directory than the one the probe watches."""
    for name in [n for n in sys.modules if n == "cudapkg" or n.startswith("cudapkg.")]:
        del sys.modules[name]
    package = tmp_path / "cudapkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "models.py").write_text(MODULE, encoding="utf-8")
    return package / "models.py"


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_asking_for_cuda_without_a_gpu_is_a_clear_error() -> None:
    with pytest.raises(EntryError, match="no CUDA device"):
        resolve_device("cuda")
    assert resolve_device("auto") == "cpu"


def test_an_unknown_device_is_a_clear_error() -> None:
    with pytest.raises(EntryError, match="unknown device 'tpu'"):
        resolve_device("tpu")


def test_entries_on_the_cpu_keep_their_inputs_where_they_are(tmp_path: Path) -> None:
    _write(tmp_path)
    entry = build_configured(
        tmp_path, EntryConfig("cudapkg.models:Scorer", ("float32[2,8] in [-1, 1]",)), seed=0
    )
    assert entry.device == "cpu"
    assert next(entry.fn.parameters()).device.type == "cpu"


@needs_cuda
def test_a_configured_module_is_searched_on_cuda(tmp_path: Path) -> None:
    path = _write(tmp_path)
    entry = build_configured(
        tmp_path,
        EntryConfig("cudapkg.models:Scorer", ("float32[4,8] in [-100, 100]",)),
        seed=0,
        device="cuda",
    )
    assert next(entry.fn.parameters()).device.type == "cuda"
    lines = frozenset({_line(path, "torch.log(probs)")})
    searcher = Searcher(entry, str(path), lines, "log", seed=0, budget=Budget(seconds=20))
    outcome = searcher.run()
    assert outcome.triggered, outcome
    # the op really ran on the GPU, while the search's own points stay on the CPU
    evaluation = searcher.evaluate(outcome.inputs)
    assert evaluation.forward or evaluation.backward
    assert searcher.probe.hits and searcher.probe.hits[0].operand.device.type == "cuda"
    assert all(x.device.type == "cpu" for x in outcome.inputs)


@needs_cuda
def test_float16_autocast_on_cuda_loses_the_epsilon_float32_keeps(tmp_path: Path) -> None:
    """Under CUDA autocast the Linear runs in float16, so `scale + 1e-8` is float16 and the
    epsilon rounds to 0 (below float16's smallest subnormal): an all-zero row divides 0 by 0.
    In float32 the epsilon holds, so only the autocast run may trigger."""
    path = _write(tmp_path)
    lines = frozenset({_line(path, "h / (scale + 1e-8)")})
    results = {}
    for autocast in (None, "float16"):
        entry = build_configured(
            tmp_path,
            EntryConfig(
                "cudapkg.models:Normaliser", ("float32[4,8] in [-30, 30]",), autocast=autocast
            ),
            seed=0,
            device="cuda",
        )
        searcher = Searcher(
            entry, str(path), lines, "div", dtype=entry.dtype, seed=0, budget=Budget(seconds=3)
        )
        results[autocast] = searcher.run()
    assert results["float16"].triggered
    assert results["float16"].where == "forward"
    assert not results[None].triggered


def _render(entry: Any, inputs: list[torch.Tensor], path: Path, op: str, text: str) -> str:
    from analyzers.dynamic.reproducer import Target, render

    return render(
        entry,
        inputs,
        Target(str(path.relative_to(path.parents[1])), _line(path, text), op, text, "forward"),
        seed=0,
    )


def test_a_cuda_entry_writes_a_reproducer_that_runs_on_cuda(tmp_path: Path) -> None:
    """Rendering only (runs everywhere): the script builds the model and the inputs on the
    device the trigger was found on, and autocasts for that device type."""
    path = _write(tmp_path)
    entry = build_configured(
        tmp_path,
        EntryConfig(
            "cudapkg.models:Normaliser", ("float32[2,3] in [-30, 30]",), autocast="float16"
        ),
        seed=0,
    )
    entry.device = "cuda"  # as build_configured(device="cuda") sets it on a GPU machine
    source = _render(entry, [torch.zeros(2, 3)], path, "div", "h / (scale + 1e-8)")
    assert "model = Normaliser().to('cuda')" in source
    assert "device='cuda', requires_grad=True)" in source
    assert "with torch.device('cuda'), torch.autocast(\"cuda\", dtype=torch.float16):" in source


@needs_cuda
def test_the_cuda_reproducer_fails_on_the_gpu(tmp_path: Path) -> None:
    path = _write(tmp_path)
    entry = build_configured(
        tmp_path,
        EntryConfig(
            "cudapkg.models:Normaliser", ("float32[4,8] in [-30, 30]",), autocast="float16"
        ),
        seed=0,
        device="cuda",
    )
    source = _render(entry, [torch.zeros(4, 8)], path, "div", "h / (scale + 1e-8)")
    script = tmp_path / "repro.py"
    script.write_text(source, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=300,
    )
    assert proc.returncode != 0 and "AssertionError" in proc.stderr, proc.stderr[-2000:]


def _harness_run(tmp_path: Path, device: str) -> dict[str, Any]:
    from harness_support import with_reproducers

    from analyzers.static import scan_source
    from runners.local import LocalRunner

    path = _write(tmp_path)
    scan = scan_source(path.read_text(encoding="utf-8"), "cudapkg/models.py")
    found = [f.to_json() for f in scan.findings if f.function == "Scorer.forward"]
    assert len(found) == 1, [(f.function, f.op) for f in scan.findings]
    job = {
        "repo": str(tmp_path),
        "findings": found,
        "entries": [],
        "seed": 0,
        "search_seconds": 5.0,
        "finding_timeout": 120.0,
        "harvest": False,
        "device": device,
        "fix": False,
    }
    result = with_reproducers(LocalRunner().run(job, timeout=300), found)
    assert len(result.records) == 1, result.stderr[-2000:]
    return result.records[0]


def test_the_harness_refuses_cuda_when_the_runner_shows_it_no_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local runner hides GPUs unless NUMCHECK_CUDA_DEVICES names some: asking for CUDA
    then is an error for the finding, on any machine, never a CPU run called CUDA."""
    monkeypatch.delenv("NUMCHECK_CUDA_DEVICES", raising=False)
    record = _harness_run(tmp_path, "cuda")
    assert record["status"] == "error" and "no CUDA device" in record["error"], record


@needs_cuda
def test_the_harness_confirms_on_the_gpu_it_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMCHECK_CUDA_DEVICES", "0")
    record = _harness_run(tmp_path, "auto")
    assert record["status"] == "confirmed", record
    assert record["trigger"]["device"] == "cuda"
    assert "device='cuda'" in record["reproducer"]
