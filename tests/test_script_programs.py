"""Script mode on tutorial-style training programs: data the script builds itself is searched,
observed boxes widen when they hold no trigger, and a bug that needs training is steered
through the first training steps. Each reproducer stands alone and fails until the bug is
fixed (bench/programs measures the same on published programs)."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from script_support import build, line_of, make_script, op_line

from analyzers.dynamic.reproducer import Target
from analyzers.dynamic.script import TRAINING_STEPS, render_script
from analyzers.dynamic.search import Budget, Searcher
from analyzers.dynamic.specs import InputSpec, widened
from analyzers.dynamic.stages import staged_search
from analyzers.model import Finding
from analyzers.report.summary import proof_sentence
from runners.harness import minimised_trigger

BUILT_DATA = """\
import numpy as np
import torch

x_data = [[1, 2], [2, 3], [3, 1], [4, 3]]
x_train = torch.FloatTensor(x_data)
offsets = torch.from_numpy(np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32))
noise = torch.tensor(np.load("noise.npy"))
labels = torch.LongTensor([0, 1, 0, 1])
scale = torch.tensor(2.0)
empty = torch.FloatTensor(2, 3)
assert isinstance(x_train, torch.FloatTensor) and not isinstance(labels, torch.FloatTensor)
z = x_train.sum(1) * scale - offsets + noise
loss = torch.log(z)  # the op
"""

NEEDS_TRAINING = """\
import torch

x_train = torch.FloatTensor([[1., 2.], [2., 3.], [3., 1.], [4., 3.]])
y_train = torch.FloatTensor([[0.], [0.], [1.], [1.]])
W = torch.zeros((2, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
optimizer = torch.optim.SGD([W, b], lr=1.0)
while True:
    hypothesis = torch.sigmoid(x_train.matmul(W) + b)
    cost = -(y_train * torch.log(hypothesis)  # the op
             + (1 - y_train) * torch.log(1 - hypothesis)).mean()  # the op
    optimizer.zero_grad()
    cost.backward()
    optimizer.step()
"""
NEEDS_TRAINING_FIXED = NEEDS_TRAINING.replace(
    "torch.log(hypothesis)", "torch.log(hypothesis.clamp_min(1e-6))"
).replace("torch.log(1 - hypothesis)", "torch.log((1 - hypothesis).clamp_min(1e-6))")

DRAWN_LOGITS = """\
import torch
import torch.nn.functional as F

torch.manual_seed(1)
z = torch.rand(3, 5, requires_grad=True)
hypothesis = F.softmax(z, dim=1)
loss = (-torch.log(hypothesis)).sum()  # the op
"""


def _reproducer(root: Path, source: str) -> Any:
    (root / "test_repro.py").write_text(source, encoding="utf-8")
    return next(
        v for k, v in runpy.run_path(str(root / "test_repro.py")).items() if k.startswith("test_")
    )


def _confirm(root: Path, name: str, op: str, seconds: float) -> tuple[Any, Any, Any, Any, Any]:
    """What the harness does with a script entry: the staged search, then the minimised
    trigger."""
    lines = op_line(root, name)
    entry, outcome, searcher = staged_search(
        build(root, name, op=op), str(root / name), lines, op, 0, Budget(seconds=seconds)
    )
    assert outcome.triggered, outcome
    small, _ = minimised_trigger(entry, searcher, outcome)
    return entry, outcome, searcher, small, lines


def test_data_the_script_builds_or_loads_is_searched(tmp_path: Path) -> None:
    root, name = make_script(tmp_path / "built", BUILT_DATA)
    np.save(root / "noise.npy", np.zeros(4, dtype=np.float32))
    original = torch.FloatTensor
    entry = build(root, name)
    assert torch.FloatTensor is original and torch.from_numpy.__name__ == "from_numpy"
    sites = [
        line_of(BUILT_DATA, line)
        for line in (
            "x_train = torch.FloatTensor(x_data)",
            "offsets = torch.from_numpy(np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32))",
            'noise = torch.tensor(np.load("noise.npy"))',
        )
    ]
    # np.load's array is the value; the tensor made of it is that value again, not another.
    # The integer labels, the scalar constant and the uninitialised FloatTensor(2, 3) are not
    # data.
    assert entry.script.labels == [
        f"data run.py:{sites[0]} #0",
        f"data run.py:{sites[1]} #0",
        f"data run.py:{sites[2]} #0",
    ]
    assert [s.source for s in entry.specs] == ["observed"] * 3
    entry, outcome, _, small, lines = _confirm(root, name, "log", 6.0)
    target = Target(name, min(lines), "log", "torch.log(z)", "forward")
    test = _reproducer(root, render_script(entry, small, target, 0))
    with pytest.raises(AssertionError, match=f"log at run.py:{min(lines)} makes NaN/Inf"):
        test()
    (root / name).write_text(
        BUILT_DATA.replace("torch.log(z)", "torch.log(z.clamp_min(1e-6))"), encoding="utf-8"
    )
    test()  # fixed: passes


def test_a_bug_that_needs_training_is_steered_through_the_training_steps(tmp_path: Path) -> None:
    """The weights start at zero, so the sigmoid is 0.5 at step 0 whatever the data: only
    once training has grown them does it saturate, and log(1 - 1) is -inf."""
    root, name = make_script(tmp_path / "steps", NEEDS_TRAINING)
    wide = build(root, name).widened()
    assert wide is not None
    one_step = Searcher(
        wide, str(root / name), op_line(root, name), "log", budget=Budget(seconds=2.0)
    ).run(wide.start)
    assert one_step.reached and not one_step.triggered  # the premise: step 0 cannot fail
    entry, outcome, searcher, small, lines = _confirm(root, name, "log", 12.0)
    assert entry.script.steps == TRAINING_STEPS
    assert entry.specs[0].source == "widened"
    step = searcher.failing_call(small)
    assert step is not None and step > 1, step
    # the fix stage's gradient check differentiates the line's last pass: the first one's
    # graph went through the script's own backward and optimiser step ("backward through
    # the graph a second time", which rejected every candidate fix)
    from analyzers.fix.entry_hooks import entry_gradients

    gradients = entry_gradients(entry, small)
    assert [tuple(g.shape) for g in gradients] == [s.shape for s in entry.specs]
    box = {"source": entry.source, "target": entry.target, "inputs": entry.describe_box()}
    finding = Finding(
        path=name,
        line=min(lines),
        column=0,
        end_line=min(lines),
        end_column=0,
        function="<module>",
        op="log",
        framework="torch",
        call="",
        operand="",
        why="",
        rule="log",
        status="confirmed",
        trigger={
            "where": "forward",
            "evaluations": outcome.evaluations,
            "seconds": 1.0,
            "stage": outcome.stage,
            "steps": step,
            "box": box,
        },
    )
    sentence = proof_sentence(finding)
    assert f"training step {step}" in sentence and "widened" in sentence, sentence
    source = render_script(
        entry, small, Target(name, min(lines), "log", "torch.log(...)", "forward"), 0
    )
    assert f"mode.stop_after = {TRAINING_STEPS}" in source
    test = _reproducer(root, source)
    with pytest.raises(AssertionError, match="makes NaN/Inf"):
        test()
    (root / name).write_text(NEEDS_TRAINING_FIXED, encoding="utf-8")
    test()  # fixed: passes


def test_logits_drawn_in_zero_one_are_searched_in_a_widened_box(tmp_path: Path) -> None:
    """torch.rand's logits stay in [0, 1], where log(softmax) cannot fail: the search widens
    the box and says so."""
    root, name = make_script(tmp_path / "drawn", DRAWN_LOGITS)
    entry, outcome, _, small, lines = _confirm(root, name, "log", 8.0)
    assert entry.specs[0].source == "widened" and (entry.specs[0].lo, entry.specs[0].hi) == (
        -100.0,
        100.0,
    )
    assert entry.script.steps == 1  # no training needed: the widened box did it
    test = _reproducer(
        root,
        render_script(
            entry, small, Target(name, min(lines), "log", "torch.log(hypothesis)", "forward"), 0
        ),
    )
    with pytest.raises(AssertionError, match="makes NaN/Inf"):
        test()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            InputSpec("float32", (3,), 0.0, 1.0, "observed"),
            InputSpec("float32", (3,), -100.0, 100.0, "widened"),
        ),
        (
            InputSpec("float32", (3,), -500.0, 20.0, "observed"),
            InputSpec("float32", (3,), -500.0, 100.0, "widened"),
        ),
        (InputSpec("float32", (3,), -500.0, 500.0, "observed"), None),  # already wider
        (InputSpec("float32", (3,), 0.0, 1.0, "config"), None),  # the repository's word
        (InputSpec("int64", (3,), 0.0, 9.0, "observed"), None),  # ids keep their meaning
        (  # a test's counts: wider, never negative
            InputSpec("float32", (3,), 0.0, 40.0, "observed", keeps_sign=True),
            InputSpec("float32", (3,), 0.0, 100.0, "widened", keeps_sign=True),
        ),
        (  # a test's log-probabilities: wider, never positive
            InputSpec("float32", (3,), -20.0, 0.0, "observed", keeps_sign=True),
            InputSpec("float32", (3,), -100.0, 0.0, "widened", keeps_sign=True),
        ),
        (  # a range seen on both sides of 0 has no sign to keep
            InputSpec("float32", (3,), -5.0, 5.0, "observed", keeps_sign=True),
            InputSpec("float32", (3,), -100.0, 100.0, "widened", keeps_sign=True),
        ),
        (InputSpec("float32", (3,), 0.0, 500.0, "observed", keeps_sign=True), None),
    ],
)
def test_only_observed_float_boxes_widen(spec: InputSpec, expected: InputSpec | None) -> None:
    assert widened(spec) == expected
