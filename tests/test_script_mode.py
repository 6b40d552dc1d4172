"""Script mode: a configured training script, run with its external values (data batches,
random draws) recorded at their call sites and substituted, so the search can steer them.

The end-to-end test drives `analyze()` on a real git repository (real torch, a tiny model, a
DataLoader, random draws) whose bugs never fire on the script's own data; the others run the
script in this process through `build_script_entry`, with self-contained scripts.
"""

from __future__ import annotations

import json
import math
import runpy
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import GitRepoFactory
from script_support import build, line_of, make_script, op_line

from analyzers.config import Config, load_config
from analyzers.dynamic.entries import EntryError
from analyzers.dynamic.localise import localise
from analyzers.dynamic.reproducer import Target
from analyzers.dynamic.script import (
    ScriptConfig,
    build_script_entry,
    minimise_script,
    render_script,
)
from analyzers.dynamic.search import Budget, Searcher
from runners.harness import FindingTimeout, _deadline
from runners.pipeline import analyze

PYPROJECT = """\
[tool.numcheck]
search_seconds = 3.0
harvest = false

[tool.numcheck.script]
command = "python train.py --epochs 1000"
run-seconds = 1.5
bounds = { data = [0, 2] }
"""

MODEL_MAIN = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor, noise: torch.Tensor):
        # a call made up from the signature gets no noise of this shape: only the script
        # reaches the op
        if noise.shape != x.shape[:1]:
            raise ValueError("one noise value per row of a real batch")
        scale = x.mean(-1) * noise
        return self.lin(x).squeeze(-1), scale
"""
LOG_LINE = "        return self.lin(x).squeeze(-1), torch.log(scale)"
MODEL_FEATURE = (
    MODEL_MAIN.replace("        return self.lin(x).squeeze(-1), scale", LOG_LINE)
    + """

class Unused(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x - self.dim)
"""
)

TRAIN_MAIN = """\
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

from scriptpkg.model import Net


def main(epochs: int) -> float:
    torch.manual_seed(0)
    features = torch.rand(64, 4) + 0.5
    targets = torch.rand(64)
    loader = DataLoader(TensorDataset(features, targets), batch_size=8, shuffle=True)
    model = Net(4)
    loss = torch.zeros(())
    for _ in range(epochs):
        for x, y in loader:
            noise = torch.rand(x.shape[0]) + 0.1
            pred, penalty = model(x, noise)
            loss = ((pred - y) ** 2).mean() - 0.01 * penalty.mean()
            model.zero_grad()
            loss.backward()
            with torch.no_grad():  # plain SGD (torch.optim would import torch._dynamo: 1.5 s)
                for weight in model.parameters():
                    weight -= 0.01 * weight.grad
    return float(loss)


if __name__ == "__main__":
    print("final loss", main(int(sys.argv[sys.argv.index("--epochs") + 1])))
"""
DIV_LINE = "            loss = ((pred - y) ** 2).mean() / y.sum() - 0.01 * penalty.mean()"
TRAIN_FEATURE = TRAIN_MAIN.replace(
    "            loss = ((pred - y) ** 2).mean() - 0.01 * penalty.mean()", DIV_LINE
)


# ---------------------------------------------------------------- end to end


def test_training_script_bugs_are_confirmed_by_steering_external_values(
    git_repo: GitRepoFactory,
) -> None:
    repo = git_repo(
        {
            "pyproject.toml": PYPROJECT,
            "scriptpkg/__init__.py": "",
            "scriptpkg/model.py": MODEL_MAIN,
            "train.py": TRAIN_MAIN,
        },
        {"scriptpkg/model.py": MODEL_FEATURE, "train.py": TRAIN_FEATURE},
    )
    config = load_config(repo.root)
    assert config.script is not None and config.script["command"] == [
        "train.py",
        "--epochs",
        "1000",
    ]
    started = time.perf_counter()
    result = analyze(repo.root, "main", "feature", config)
    assert result.errors == []
    found = {(f.path, f.op): f for f in result.findings}
    assert set(found) == {
        ("scriptpkg/model.py", "log"),
        ("scriptpkg/model.py", "sqrt"),
        ("train.py", "div"),
    }

    log = found["scriptpkg/model.py", "log"]
    assert log.status == "confirmed", log.error
    assert log.trigger is not None and log.trigger["where"] == "forward"
    box = log.trigger["box"]
    assert (box["source"], box["target"]) == ("script", "script: train.py --epochs 1000")
    sites = {b["site"]: (b["lo"], b["hi"], b["source"]) for b in box["inputs"]}
    loop = line_of(TRAIN_FEATURE, "        for x, y in loader:")
    noise = line_of(TRAIN_FEATURE, "            noise = torch.rand(x.shape[0]) + 0.1")
    features = line_of(TRAIN_FEATURE, "    features = torch.rand(64, 4) + 0.5")
    assert sites == {  # not the weight init inside nn.Linear: that is the library's
        f"random train.py:{features} #0": (0.0, 1.0, "observed"),
        f"random train.py:{features + 1} #0": (0.0, 1.0, "observed"),
        f"data train.py:{loop} #0[0]": (0.0, 2.0, "config"),
        f"data train.py:{loop} #0[1]": (0.0, 2.0, "config"),
        f"random train.py:{noise} #0": (0.0, 1.0, "observed"),
    }
    # the script's own values do not fire (the search started there: its first evaluation
    # is still short of log's domain), so the search had to steer them
    (first, loss, stage), *_ = log.trigger["trace"]
    assert (first, stage) == (1, "restarts") and loss > 0
    # every evaluation re-ran the script, stopped right after the op: not 1000 epochs
    assert log.trigger["seconds"] / log.trigger["evaluations"] < 0.5

    div = found["train.py", "div"]
    assert div.status == "confirmed", div.error
    assert div.reproducer is not None and f"'data train.py:{loop} #0[1]': value_" in div.reproducer

    # a module the script never reaches within its per-run limit is still reached: the
    # synthesised call builds it with a size for its `dim: int` (signatures.constructor_args)
    sqrt = found["scriptpkg/model.py", "sqrt"]
    assert sqrt.status == "confirmed", sqrt.error
    assert sqrt.trigger is not None and sqrt.trigger["box"]["source"] == "synthesised"
    assert sqrt.reproducer is not None and "(dim=8)" in sqrt.reproducer
    # three confirmed findings, each with its fix stage (the sqrt one was an error before
    # constructors got sizes): a bound on a runaway, not a benchmark
    assert time.perf_counter() - started < 150, time.perf_counter() - started

    # checked fixes in script mode: each candidate's script runs in a patched copy of the
    # repository (its modules imported afresh), the search re-run there finds nothing
    for finding, line in ((log, LOG_LINE), (div, DIV_LINE)):
        fix = finding.fix
        assert fix is not None and fix["status"] == "validated", fix
        assert fix["original"] == line + "\n" and fix["replacement"] != fix["original"]
        checks = {c["name"]: c for c in fix["validation"]["checks"]}
        assert all(c["ran"] and c["passed"] for c in checks.values()), checks
        assert checks["equivalence"]["figures"]["compared"] > 0
        (search,) = checks["search"]["figures"]["runs"].values()
        assert search["reached"] and not search["triggered"]  # it ran the patched line

    # the reproducer stands alone: seeded values plus the changes that matter, and it
    # passes once the line is fixed
    script = log.reproducer
    assert script is not None and "import scriptpkg" not in script
    assert "x = natural.detach().clone()" in script
    assert f"'data train.py:{loop} #0[0]': value_" in script
    (repo.root / "test_repro.py").write_text(script, encoding="utf-8")
    (repo.root / "scriptpkg/model.py").write_text(
        MODEL_FEATURE.replace("torch.log(scale)", "torch.log(scale.clamp_min(1e-6))"),
        encoding="utf-8",
    )
    fixed = subprocess.run(
        [sys.executable, "test_repro.py"], cwd=repo.root, capture_output=True, text=True, timeout=60
    )
    assert fixed.returncode == 0, fixed.stderr[-2000:]


# ---------------------------------------------------------------- in this process


STEERED = """\
import json
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        return {"x": torch.full((3,), 1.0 + i), "w": torch.tensor(float(i % 4) + 1.0)}


def main(progress):
    noise = [torch.randn(3) for _ in range(2)]
    layer = torch.nn.Linear(3, 3)
    index = torch.randint(0, 3, (2,))
    for step, batch in enumerate(DataLoader(Pairs(), batch_size=4)):
        with open(progress, "w") as handle:
            handle.write(json.dumps(step))
        h = layer(batch["x"]) * batch["w"][:, None]
        out = torch.log(batch["x"].sum(-1) + noise[0].abs().sum() * 0)  # the op
    return out, h, index


main(sys.argv[1])
"""


def test_values_are_keyed_by_call_site_and_substituted_and_runs_stop_after_the_op(
    tmp_path: Path,
) -> None:
    progress = tmp_path / "progress.json"
    root, name = make_script(tmp_path / "steered", STEERED)
    entry = build(root, name, args=(str(progress),), max_values=3, bounds={"random": (-1.0, 1.0)})
    # the two draws on one line are told apart by occurrence; the weight init inside
    # nn.Linear is the library's and randint's integers are not searched; max_values keeps
    # the three values nearest the op
    draws = line_of(STEERED, "    noise = [torch.randn(3) for _ in range(2)]")
    loop = line_of(STEERED, "    for step, batch in enumerate(DataLoader(Pairs(), batch_size=4)):")
    assert entry.script.labels == [
        f"random run.py:{draws} #1",
        f"data run.py:{loop} #0['x']",
        f"data run.py:{loop} #0['w']",
    ]
    assert [(s.shape, s.lo, s.hi, s.source) for s in entry.specs] == [
        ((3,), -1.0, 1.0, "config"),
        ((4, 3), 0.0, 40.0, "observed"),
        ((4,), 0.0, 40.0, "observed"),
    ]
    assert json.loads(progress.read_text()) == 0  # stopped at the first step, of 8
    natural = entry.call(entry.start or [])
    assert [bool(torch.isfinite(o).all()) for o in natural] == [True]
    zeros = [entry.start[0], torch.zeros(4, 3), entry.start[2]]  # type: ignore[index]
    (out,) = entry.call(zeros)
    assert out.tolist() == [-math.inf] * 4  # the substituted batch reached the op
    assert json.loads(progress.read_text()) == 0

    searcher = Searcher(
        entry, str(root / name), op_line(root, name), "log", budget=Budget(seconds=5.0)
    )
    outcome = searcher.run(entry.start)
    assert outcome.triggered and outcome.where == "forward", outcome


NUMPY_DRAW = """\
import numpy as np
import torch
from numpy.random import rand


def main():
    weights = np.random.rand(4)
    offset = rand()
    x = torch.from_numpy(weights) * 10 + offset
    return torch.log(x)  # the op


main()
"""


def test_numpy_draws_are_external_values_and_the_reproducer_stands_alone(tmp_path: Path) -> None:
    root, name = make_script(tmp_path / "numpy_draw", NUMPY_DRAW)
    original = np.random.rand
    entry = build(root, name)
    assert np.random.rand is original  # restored after the run
    weights = line_of(NUMPY_DRAW, "    weights = np.random.rand(4)")
    offset = line_of(NUMPY_DRAW, "    offset = rand()")
    assert entry.script.labels == [f"random run.py:{weights} #0", f"random run.py:{offset} #0"]
    assert [(s.dtype, s.shape, s.lo, s.hi) for s in entry.specs] == [
        ("float64", (4,), 0.0, 1.0),
        ("float64", (), 0.0, 1.0),
    ]
    (natural,) = entry.call(entry.start or [])
    assert bool(torch.isfinite(natural).all())
    lines = op_line(root, name)
    outcome = Searcher(entry, str(root / name), lines, "log", budget=Budget(seconds=5.0)).run(
        entry.start
    )
    assert outcome.triggered, outcome
    small = minimise_script(
        entry, outcome.inputs, lambda trial: not bool(torch.isfinite(entry.call(trial)[0]).all())
    )
    target = Target(name, min(lines), "log", "torch.log(x)", "forward")
    source = render_script(entry, small, target, 0)
    assert "import numpy" not in source.split("def value_")[0]  # torch is all it needs
    (root / "test_repro.py").write_text(source, encoding="utf-8")
    test = next(
        v for k, v in runpy.run_path(str(root / "test_repro.py")).items() if k.startswith("test_")
    )
    with pytest.raises(AssertionError, match=f"log at run.py:{min(lines)} makes NaN/Inf"):
        test()
    (root / name).write_text(
        NUMPY_DRAW.replace("torch.log(x)", "torch.log(x + 1)"), encoding="utf-8"
    )
    test()  # fixed: passes


def test_module_commands_get_their_arguments(tmp_path: Path) -> None:
    root = tmp_path / "module_command"
    make_script(root / "mscript_pkg", "", name="__init__.py")
    make_script(
        root / "mscript_pkg",
        """\
        import sys

        import torch

        shift = float(sys.argv[sys.argv.index("--shift") + 1])
        x = torch.rand(4) + shift
        y = torch.log(x)  # the op
        """,
        name="train.py",
    )
    config = ScriptConfig(("-m", "mscript_pkg.train", "--shift", "-2"))
    lines = op_line(root / "mscript_pkg", "train.py")
    entry = build_script_entry(root, config, "mscript_pkg/train.py", lines, "log", 0)
    assert entry.script.labels == ["random mscript_pkg/train.py:6 #0"]
    (out,) = entry.call(entry.start or [])
    assert bool(torch.isnan(out).all())  # the argument reached the script: rand - 2 < 0


def test_the_findings_deadline_still_wins_over_a_longer_run_limit(tmp_path: Path) -> None:
    """The per-run limit nests inside the harness's deadline for the whole finding."""
    root, name = make_script(
        tmp_path / "deadline",
        """\
        import torch
        x = torch.rand(3)
        while True:
            pass
        y = torch.log(x)  # the op
        """,
    )
    started = time.perf_counter()
    with pytest.raises(FindingTimeout), _deadline(0.5):
        build(root, name, run_seconds=30.0)
    assert time.perf_counter() - started < 5
    with pytest.raises(EntryError, match="per-run limit"), _deadline(30.0):
        build(root, name, run_seconds=0.3)  # and the shorter run limit fires inside it


GRADIENT_ONLY = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.rand(16, 3) + 1.0)
layer = torch.nn.Linear(3, 3)
for (x,) in DataLoader(data, batch_size=4):
    h = layer(x) * 0 + x
    norm = torch.sqrt((h ** 2).sum(-1))  # the op
    norm.sum().backward()
"""


def test_a_gradient_only_failure_gets_a_reproducer_that_checks_the_gradient(tmp_path: Path) -> None:
    root, name = make_script(tmp_path / "gradient", GRADIENT_ONLY)
    lines = op_line(root, name)
    entry = build(root, name, op="sqrt")
    searcher = Searcher(entry, str(root / name), lines, "sqrt", budget=Budget(seconds=5.0))
    outcome = searcher.run(entry.start)
    assert outcome.triggered and outcome.where == "backward", outcome
    small = minimise_script(entry, outcome.inputs, lambda trial: searcher.evaluate(trial).backward)
    first = localise(entry, small, str(root), where="backward")  # as the harness does
    assert first is not None and first["where"] == "backward", first
    source = render_script(
        entry, small, Target(name, min(lines), "sqrt", "torch.sqrt(...)", "backward"), 0
    )
    (root / "test_repro.py").write_text(source, encoding="utf-8")
    test = next(
        v for k, v in runpy.run_path(str(root / "test_repro.py")).items() if k.startswith("test_")
    )
    with pytest.raises(AssertionError, match="its gradient is NaN/Inf"):
        test()


@pytest.mark.parametrize(
    ("body", "settings", "message"),
    [
        (
            """\
     import torch
     x = torch.rand(3)
     raise ValueError("no data found")
     y = torch.log(x)  # the op
     """,
            {},
            "the script raised ValueError: no data found at run.py:3 before reaching run.py:4",
        ),
        (
            """\
     import torch
     x = torch.rand(3)
     while True:
         pass
     y = torch.log(x)  # the op
     """,
            {"run_seconds": 0.5},
            "the script did not reach run.py:5 within its per-run limit of ",
        ),
        (
            """\
     import torch
     x = torch.rand(3)
     if x.sum() > 100:
         y = torch.log(x)  # the op
     """,
            {},
            "script `run.py` ran to completion without reaching run.py:4",
        ),
        (
            """\
     import sys
     import torch
     x = torch.rand(3)
     sys.exit(3)
     y = torch.log(x)  # the op
     """,
            {},
            "the script exited with status 3 before reaching run.py:5",
        ),
        (
            """\
     import torch
     x = torch.rand(3)
     exit()
     y = torch.log(x)  # the op
     """,
            {},
            "script `run.py` ran to completion without reaching run.py:4",
        ),
        (
            """\
     import sys
     import torch
     x = torch.rand(3)
     quit(0) if x.sum() < 100 else sys.exit(0)
     y = torch.log(x)  # the op
     """,
            {},
            "script `run.py` ran to completion without reaching run.py:5",
        ),
        (
            """\
     import torch
     y = torch.log(torch.ones(3))  # the op
     """,
            {},
            "no float external value (data batch, random draw) came before it",
        ),
    ],
)
def test_a_script_that_cannot_get_to_the_op_is_a_clear_error(
    tmp_path: Path, body: str, settings: dict[str, object], message: str
) -> None:
    root, name = make_script(tmp_path / "broken", textwrap.dedent(body))
    started = time.perf_counter()
    with pytest.raises(EntryError) as raised:
        build(root, name, **settings)
    assert message in str(raised.value)
    assert time.perf_counter() - started < 5


def test_a_script_runs_with_python_script_py_semantics(tmp_path: Path) -> None:
    """`import myutil` from the script's folder, `__main__`, `__file__`, `sys.argv`, and data
    paths relative to the repository: what `python scripts/train.py --steps 2` gives it."""
    root = tmp_path / "semantics"
    (root / "data").mkdir(parents=True)
    (root / "data" / "scale.txt").write_text("2.0\n", encoding="utf-8")
    root, name = make_script(root / "scripts", "", "myutil.py")
    (root / "myutil.py").write_text(
        "def scale():\n    return float(open('data/scale.txt').read())\n", encoding="utf-8"
    )
    root = root.parent
    make_script(
        root,
        """\
        import os
        import sys
        import torch
        import myutil
        assert __name__ == "__main__", __name__
        assert __file__.endswith(os.path.join("scripts", "train.py")), __file__
        assert sys.argv[1:] == ["--steps", "2"], sys.argv
        assert os.path.samefile(sys.argv[0], "scripts/train.py"), sys.argv[0]
        assert sys.path[0] == os.path.dirname(os.path.abspath(__file__)), sys.path[0]
        x = torch.rand(3) * myutil.scale()
        y = torch.log(x)  # the op
        """,
        "scripts/train.py",
    )
    entry = build(root, "scripts/train.py", args=("--steps", "2"))
    assert entry is not None


UNGUARDED = """\
import torch
from torch import nn

torch.manual_seed(0)
features = torch.rand(64, 3)
labels = torch.randint(0, 2, (64,))
model = nn.Linear(3, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def nll(logits, onehot):
    probs = torch.softmax(logits, -1)
    return -(onehot * torch.log(probs)).sum(-1).mean()


for step in range(10_000_000):  # importing this file would train until the deadline
    scores = model(features)
    loss = nll(scores, nn.functional.one_hot(labels, 2))
    spread = torch.log(scores.abs().sum())
    optimizer.zero_grad()
    (loss + spread).backward()
    optimizer.step()
"""


def test_an_unguarded_training_script_is_never_imported_and_runs_as_a_script(
    git_repo: GitRepoFactory,
) -> None:
    """No configuration: the file does work at import, so its function is extracted rather
    than imported (the training loop never runs), and the top-level op is reached by running
    the file as `python train.py` up to the op."""
    repo = git_repo({"train.py": "import torch\n"}, {"train.py": UNGUARDED})
    started = time.monotonic()
    result = analyze(
        repo.root,
        "main",
        "feature",
        Config(search_seconds=3.0, harvest=False, fix=False, dynamic_timeout=400),
    )
    by_line = {f.line: f for f in result.findings}
    assert time.monotonic() - started < 300  # nothing ran to the deadline
    in_function = by_line[
        line_of(UNGUARDED, "    return -(onehot * torch.log(probs)).sum(-1).mean()")
    ]
    assert in_function.status == "confirmed", in_function.error
    assert "does work at import (line 16: a loop at the top level)" in (
        in_function.reproducer or ""
    )
    assert "importlib.import_module('train')" not in (in_function.reproducer or "")
    at_top = by_line[line_of(UNGUARDED, "    spread = torch.log(scores.abs().sum())")]
    assert at_top.status in ("confirmed", "not-triggered"), at_top.error
    assert at_top.trigger is not None and at_top.trigger["box"]["source"] == "script"
