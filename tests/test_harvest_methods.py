"""Harvested method calls: the repository's own tests build a module with constructor
arguments and call it; the finding inside the method is searched on the recorded module (its
state, its observed input range) and the reproducer rebuilds the module without the tests.

The harness runs once per module (a real child process, the real local runner); the rest runs
in process on `entry_from_call` with recorded calls made by hand.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import re
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from harness_support import Run, run_findings, run_script, write_repo
from torch import nn

from analyzers.dynamic.encoding import spell
from analyzers.dynamic.harvest import (
    STATE_LIMIT,
    Construction,
    HarvestedMethod,
    ModuleReplay,
    Recorded,
    entry_from_call,
    observed_box,
)
from analyzers.dynamic.reproducer import Target, render
from analyzers.dynamic.search import Budget
from analyzers.dynamic.stages import staged_search

NET = '''\
import torch
from torch import nn


class Centred(nn.Module):
    """log of the squared distance to a centre: -inf when x sits on it. A fresh centre is
    -1, outside every input the tests use; the tests move it to 0.5."""

    def __init__(self, features: int, eps: float = 0.0) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.register_buffer("centre", torch.full((features,), -1.0))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x - self.centre
        return torch.log((d * d).sum(-1) + self.eps) + self.proj(x).sum(-1)  # @centred


class Config:
    def __init__(self, scale: float) -> None:
        self.scale = scale


class Configured(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.scale = config.scale
        self.norm = nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(self.norm(x).abs() * self.scale)  # @configured


def row_norm(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt((x ** 2).sum(-1))  # @row-norm
'''

TESTS = """\
import torch

from mods.net import Centred, Config, Configured, row_norm


def test_centred():
    torch.manual_seed(0)
    model = Centred(4, eps=0.0)
    model.centre.fill_(0.5)
    out = model(torch.rand(3, 4))
    assert out.shape == (3,)


def test_configured():
    model = Configured(Config(2.0))
    out = model(torch.rand(5, 3) * 4)
    assert out.shape == (5, 3)


def test_row_norm():
    assert row_norm(torch.rand(3, 4)).shape == (3,)
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    repo = write_repo(
        tmp_path_factory.mktemp("harvest-methods") / "repo",
        {"mods/__init__.py": "", "mods/net.py": NET, "tests/test_net.py": TESTS},
    )
    return run_findings(
        repo,
        "mods/net.py",
        ["Centred.forward", "Configured.forward", "row_norm"],
        finding_timeout=60.0,
        timeout=240,
    )


def line_of(marker: str) -> int:
    (line,) = [i for i, text in enumerate(NET.splitlines(), 1) if text.endswith(marker)]
    return line


def test_method_finding_is_confirmed_on_the_recorded_module(run: Run) -> None:
    record = run.record("Centred.forward")
    assert record["status"] == "confirmed", record
    assert record["box"] == {
        "source": "harvested",
        "target": "mods.net:Centred.forward",
        "inputs": [
            {
                "dtype": "float32",
                "shape": [3, 4],
                "lo": 0.0,
                "hi": 1.0,
                "source": "observed",
                "keeps_sign": True,
            }
        ],
    }
    trigger = record["trigger"]
    assert trigger["where"] == "forward"
    # only the recorded centre (0.5) is reachable from the observed box [0, 1]
    assert [0.5] * 4 in trigger["inputs"][0]["values"]
    assert trigger["first_nonfinite"] == {
        "op": "log",
        "path": "mods/net.py",
        "line": line_of("@centred"),
        "where": "forward",
    }


def test_reproducer_rebuilds_the_module_from_its_recorded_constructor_call(run: Run) -> None:
    script = run.record("Centred.forward")["reproducer"]
    assert "from mods.net import Centred" in script
    assert "model = Centred(4, eps=0.0)" in script
    # the test seeded with 0 before building: only the moved centre differs from a fresh build
    assert "'centre': torch.tensor([0.5, 0.5, 0.5, 0.5], dtype=torch.float32)" in script
    assert "proj.weight" not in script
    assert "model.train(True)" in script and "model.forward(x)" in script


def test_reproducer_fails_standalone_and_only_because_of_the_recorded_state(run: Run) -> None:
    script = run.record("Centred.forward")["reproducer"]
    failed = run_script(run.repo, script)
    assert failed.returncode != 0 and "AssertionError" in failed.stderr, failed.stderr[-2000:]
    without_state = script.replace("model.load_state_dict(state, strict=False)", "pass")
    assert without_state != script
    passed = run_script(run.repo, without_state)
    assert passed.returncode == 0, passed.stderr[-2000:]


def test_unspellable_constructor_is_searched_but_gets_an_honest_reason(run: Run) -> None:
    record = run.record("Configured.forward")
    # triggered, yet without a script anyone can run it stays a potential finding
    assert record["status"] == "potential" and "reproducer" not in record, record
    assert record["trigger"]["where"] in ("forward", "backward")
    assert record["box"]["source"] == "harvested"
    assert record["box"]["inputs"][0]["source"] == "observed"
    assert record["trigger"]["first_nonfinite"]["line"] == line_of("@configured")
    assert "no standalone reproducer" in record["error"]
    assert "mods.net.Config, which a script cannot spell" in record["error"]


def test_backward_trigger_of_a_harvested_function_is_localised_in_the_gradient(run: Run) -> None:
    record = run.record("row_norm")
    assert record["status"] == "confirmed", record
    assert record["box"]["inputs"][0]["source"] == "observed"
    first = record["trigger"]["first_nonfinite"]
    assert record["trigger"]["where"] == "backward"
    assert (first["where"], first["op"], first["line"], first["node"]) == (
        "backward",
        "sqrt",
        line_of("@row-norm"),
        "SqrtBackward0",
    )
    assert first["reaches_inputs"] is True and first["inputs"] == ["x"]


# ---------------------------------------------------------------- in process


class Normalised(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(features)
        self.head = nn.Linear(features, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(self.head(self.norm(x)).abs())


class Wide(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.lin = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(self.lin(x).abs())

    def length(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return torch.sqrt((self.lin(x) ** 2).sum(-1)) * scale


class WiderStill(Wide):
    pass


class Shifted(nn.Module):
    """-inf when a row of x sits on the centre; a fresh centre is -1."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.register_buffer("centre", torch.full((features,), -1.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(((x - self.centre) ** 2).sum(-1))


def recorded(module: nn.Module, x: torch.Tensor, init: Construction | None) -> Recorded:
    return Recorded((x.clone(),), {}, copy.deepcopy(module), init)


def key_of(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}.forward"


def test_method_that_updates_running_stats_runs_on_a_fresh_copy_each_time() -> None:
    torch.manual_seed(3)
    model = Normalised(4).train()
    x = torch.randn(6, 4)
    entry = entry_from_call(
        key_of(Normalised), recorded(model, x, Construction((4,), {}, 3)), Normalised.forward
    )
    assert isinstance(entry, HarvestedMethod) and isinstance(entry.fn, ModuleReplay)
    assert entry.fn.fresh is True
    before = entry.fn.module.norm.running_mean.clone()
    first, second = entry.call([x]), entry.call([x])
    assert torch.equal(first, second)
    assert torch.equal(entry.fn.module.norm.running_mean, before)
    assert entry.specs[0].source == "observed" and entry.start is not None
    assert torch.equal(entry.start[0], x)
    assert entry.module_script.reason is None


def test_method_that_leaves_state_alone_is_not_copied() -> None:
    torch.manual_seed(3)
    model = Normalised(4).eval()
    entry = entry_from_call(
        key_of(Normalised),
        recorded(model, torch.randn(6, 4), Construction((4,), {}, 3)),
        Normalised.forward,
    )
    assert isinstance(entry.fn, ModuleReplay) and entry.fn.fresh is False


def test_mixed_train_and_eval_modes_are_restored_by_the_script() -> None:
    torch.manual_seed(3)
    model = Normalised(4).eval()
    model.norm.train()
    entry = entry_from_call(
        key_of(Normalised),
        recorded(model, torch.randn(6, 4), Construction((4,), {}, 3)),
        Normalised.forward,
    )
    assert isinstance(entry, HarvestedMethod)
    assert entry.module_script.reason is None
    source = render(entry, [torch.zeros(6, 4)], Target("x.py", 1, "log", "log", "forward"), 0)
    assert "torch.manual_seed(3)\n    model = Normalised(4)" in source
    assert "model.train(False)" in source
    assert "model.get_submodule('norm').training = True" in source


def test_state_too_large_to_embed_keeps_the_search_and_gives_the_reason() -> None:
    """Built under seed 7 but recorded as unseeded: every weight differs from the rebuild."""
    torch.manual_seed(7)
    model = Wide(128)
    x = torch.rand(2, 128)
    entry = entry_from_call(
        key_of(Wide), recorded(model, x, Construction((128,), {}, None)), Wide.forward
    )
    assert isinstance(entry, HarvestedMethod)
    reason = entry.module_script.reason
    assert reason is not None and f"more than the {STATE_LIMIT // 1024} KiB" in reason
    assert torch.equal(entry.call([x]), model(x)), "the search still runs the real module"
    source = render(entry, [x], Target("mods/wide.py", 9, "log", "torch.log(...)", "forward"), 0)
    assert "assert" not in source and "model" not in source
    namespace: dict[str, Any] = {}
    with pytest.raises(SystemExit, match="no standalone reproducer.*KiB"):
        exec(compile(source, "repro.py", "exec"), namespace)


def test_larger_state_is_embedded_as_saved_bytes_and_the_script_fails_on_it() -> None:
    """100 moved values: more than a literal is written for, few enough to embed."""
    model = Shifted(100)
    model.centre.fill_(0.5)
    entry = entry_from_call(
        key_of(Shifted),
        recorded(model, torch.rand(2, 100), Construction((100,), {}, 0)),
        Shifted.forward,
    )
    assert isinstance(entry, HarvestedMethod) and entry.module_script.reason is None
    assert entry.module_script.state and entry.module_script.state_values is None
    source = render(
        entry,
        [torch.full((2, 100), 0.5)],
        Target("tests/x.py", 1, "log", "torch.log(...)", "forward"),
        0,
    )
    assert "import base64" in source and "STATE = (" in source
    with pytest.raises(AssertionError, match="makes the output NaN/Inf"):
        exec(compile(source, "repro.py", "exec"), {"__name__": "__main__"})
    fresh = source.replace("model.load_state_dict(state, strict=False)", "pass")
    exec(compile(fresh, "repro.py", "exec"), {"__name__": "__main__"})  # passes without it


def test_the_recorded_seed_makes_the_same_module_small() -> None:
    torch.manual_seed(7)
    model = Wide(128)
    entry = entry_from_call(
        key_of(Wide), recorded(model, torch.rand(2, 128), Construction((128,), {}, 7)), Wide.forward
    )
    assert isinstance(entry, HarvestedMethod)
    assert entry.module_script.reason is None
    assert entry.module_script.state == "" and entry.module_script.state_values is None


def test_module_built_without_a_recorded_constructor_call_gets_the_reason() -> None:
    entry = entry_from_call(key_of(Wide), recorded(Wide(4), torch.rand(2, 4), None), Wide.forward)
    assert isinstance(entry, HarvestedMethod)
    assert entry.module_script.reason is not None
    assert "was not recorded" in entry.module_script.reason


def test_other_methods_replay_too_and_their_gradient_failure_names_the_parameters() -> None:
    """length() at a point where lin(x) = 0: sqrt's gradient is inf there, and NaN reaches
    the input and the Linear's parameters of the module the entry ran on."""
    from analyzers.dynamic.localise import localise

    torch.manual_seed(0)
    model = Wide(3)
    with torch.no_grad():
        model.lin.bias.zero_()
    call = Recorded(
        (torch.rand(2, 3),), {"scale": 2.0}, copy.deepcopy(model), Construction((3,), {}, 0)
    )
    entry = entry_from_call(f"{__name__}:Wide.length", call, Wide.length)
    assert isinstance(entry.fn, ModuleReplay) and entry.fn.method == "length"
    assert entry.param_names == ["x"] and entry.template_kwargs == {"scale": 2.0}
    assert torch.allclose(entry.call([call.args[0]]), model.length(call.args[0], scale=2.0))
    found = localise(entry, [torch.zeros(2, 3)], str(Path(__file__).parent), where="backward")
    assert found is not None and found["where"] == "backward"
    assert (found["op"], found["node"]) == ("sqrt", "SqrtBackward0")
    assert found["path"] == Path(__file__).name
    assert found["inputs"] == ["x"] and found["parameters"] == ["lin.bias", "lin.weight"]
    assert model.lin.weight.grad is None and entry.fn.module.lin.weight.grad is None


def test_a_subclass_instance_gets_the_reason_instead_of_the_base_class_script() -> None:
    entry = entry_from_call(
        key_of(Wide),
        recorded(WiderStill(4), torch.rand(2, 4), Construction((4,), {}, 0)),
        Wide.forward,
    )
    assert isinstance(entry, HarvestedMethod)
    reason = entry.module_script.reason
    assert reason is not None and "WiderStill, a subclass" in reason


class Stateless:
    """A namespace of methods, as gpytorch's `Interpolation()`: nothing in the object."""

    def spread(self, x: torch.Tensor, width: float = 1.0) -> torch.Tensor:
        return x / (x.max() - x.min()) * width


class Holding:
    def __init__(self, scale: float = 2.0) -> None:
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class Needing:
    def __init__(self, scale: float) -> None:
        pass

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_a_stateless_plain_object_is_replayed_on_a_new_one_per_call() -> None:
    x = torch.tensor([0.0, 1.0, 3.0])
    call = Recorded((x,), {"width": 2.0}, Stateless())
    entry = entry_from_call(f"{__name__}:Stateless.spread", call, Stateless.spread)
    assert not isinstance(entry, HarvestedMethod)
    assert entry.param_names == ["x"] and entry.constants == {"width": 2.0}
    assert torch.equal(entry.call([x]), Stateless().spread(x, width=2.0))
    assert not torch.isfinite(entry.call([torch.ones(3)])).any()  # the search's trigger


def interpolate(grid: list[torch.Tensor], x: torch.Tensor, scale: float) -> torch.Tensor:
    return (x - grid[0][0]) / (grid[0][1] - grid[0][0]) * scale + grid[1].sum()


def test_a_recorded_list_of_tensors_is_searched_element_by_element() -> None:
    """The tests call `interpolate([g0, g1], x)`: each element is a searched input inside
    its own observed box, the call gathers them back into a list, and the reproducer
    spells that list."""
    g0, g1, x = torch.tensor([0.0, 0.5, 1.0]), torch.tensor([2.0, 3.0]), torch.rand(4)
    call = Recorded(([g0, g1], x, 2.0), {}, None)
    entry = entry_from_call(f"{__name__}:interpolate", call, interpolate)
    assert entry.param_names == ["grid_0", "grid_1", "x"]
    assert [spec.shape for spec in entry.specs] == [(3,), (2,), (4,)]
    assert (entry.specs[1].lo, entry.specs[1].hi) == observed_box(g1)
    assert torch.equal(entry.call([g0, g1, x]), interpolate([g0, g1], x, 2.0))
    flat = torch.zeros(3)  # coincident grid points: a zero step
    assert not torch.isfinite(entry.call([flat, g1, x])).any()
    source = render(entry, [flat, g1, x], Target("t.py", 1, "div", "(...) / (...)", "forward"), 0)
    assert "interpolate([grid_0, grid_1], x, 2.0)" in source


def log_count(counts: torch.Tensor) -> torch.Tensor:
    return torch.log(counts + 1.0)  # -inf only for a count of -1


def exp_log_prob(log_prob: torch.Tensor) -> torch.Tensor:
    return torch.exp(log_prob * 2.0)  # overflows only for a log-probability above 44


def _line_of(fn: Any, text: str) -> frozenset[int]:
    source, first = inspect.getsourcelines(fn)
    return frozenset(first + i for i, line in enumerate(source) if text in line)


@pytest.mark.parametrize(
    ("fn", "op", "recorded", "box"),
    [
        (log_count, "log", torch.tensor([0.0, 3.0, 5.0]), (0.0, 100.0)),
        (exp_log_prob, "exp", torch.tensor([-2.3, -0.7, -0.1]), (-100.0, 0.0)),
    ],
)
def test_recorded_values_widen_without_changing_sign(
    fn: Any, op: str, recorded: torch.Tensor, box: tuple[float, float]
) -> None:
    """The tests passed counts (>= 0) or log-probabilities (<= 0): the observed box holds no
    trigger, and the widened one grows in magnitude on the same side of 0, where the op
    cannot fail either. The same call with a stand-in's sign (a random draw) is proven by
    crossing 0, which is the proof this rule keeps out of a review."""
    entry = entry_from_call(f"{__name__}:{fn.__name__}", Recorded((recorded,), {}, None), fn)
    assert entry.specs[0].keeps_sign
    lines = _line_of(fn, f"torch.{op}(")
    stage, outcome, _ = staged_search(entry, __file__, lines, op, 0, Budget(seconds=3.0))
    assert outcome.reached and not outcome.triggered, outcome
    assert stage.specs[0].source == "widened" and (stage.specs[0].lo, stage.specs[0].hi) == box
    stand_in = dataclasses.replace(
        entry, specs=[dataclasses.replace(entry.specs[0], keeps_sign=False)]
    )
    _, crossed, _ = staged_search(stand_in, __file__, lines, op, 0, Budget(seconds=3.0))
    assert crossed.triggered, crossed


def test_a_stateless_object_replays_a_recorded_list_too() -> None:
    grid = [torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0])]
    call = Recorded((grid,), {}, Listing())
    entry = entry_from_call(f"{__name__}:Listing.first_gap", call, Listing.first_gap)
    assert entry.param_names == ["grid_0", "grid_1"]
    assert torch.equal(entry.call(grid), Listing().first_gap(grid))


class Listing:
    def first_gap(self, grid: list[torch.Tensor]) -> torch.Tensor:
        return 1.0 / (grid[0][1] - grid[0][0]) + grid[1]


@pytest.mark.parametrize(
    ("owner", "why"),
    [(Holding(), "Holding methods need the test's object state"), (Needing(1.0), "Needing")],
)
def test_methods_of_plain_objects_with_state_are_still_refused(owner: Any, why: str) -> None:
    method = type(owner).forward
    with pytest.raises(ValueError, match=why):
        entry_from_call(
            f"{__name__}:{type(owner).__name__}.forward",
            Recorded((torch.rand(2),), {}, owner),
            method,
        )


@pytest.mark.parametrize(
    ("value", "source"),
    [
        ((4,), "(4,)"),
        ([1, 2.5], "[1, 2.5]"),
        ({"eps": float("inf")}, "{'eps': float('inf')}"),
        (torch.float16, "torch.float16"),
        (None, "None"),
        ("gelu", "'gelu'"),
    ],
)
def test_spell_writes_constructor_arguments_as_source(value: Any, source: str) -> None:
    assert spell(value) == source


def test_spell_refuses_what_a_script_cannot_write() -> None:
    with pytest.raises(ValueError, match=re.escape("torch.nn.modules.linear.Linear")):
        spell([1, nn.Linear(2, 2)])


def test_a_recorded_method_call_gets_a_checked_fix(run: Run) -> None:
    """The fix stage rebinds the recorded module to the patched file (its classes swapped for
    their patched versions, its state kept) and validates the candidates on it."""
    fixes = {
        function: [
            r["fix"]
            for r in run.result.records
            if r["fingerprint"] == fingerprint and r.get("stage") == "fix"
        ]
        for function, fingerprint in run.fingerprints.items()
    }
    (centred,) = fixes["Centred.forward"]
    assert centred["status"] == "validated", centred
    added = [line for line in centred["diff"].splitlines() if line.startswith("+    ")]
    assert (
        len(added) == 1
        and "(d * d).sum(-1) + self.eps" in added[0]
        and added[0] != "+" + NET.splitlines()[line_of("# @centred") - 1]
    ), centred["diff"]
    checks = {c["name"]: c for c in centred["validation"]["checks"]}
    assert checks["reproducer"]["passed"] and checks["search"]["passed"]
    assert checks["equivalence"]["passed"] and checks["equivalence"]["figures"]["inputs"] > 0


def test_the_harvest_limit_holds_against_tests_that_swallow_exceptions(tmp_path: Path) -> None:
    """`harvest_seconds` ends the whole test session, even where a test catches every
    Exception in a loop (a plain TimeoutError would fail that test and let the next run), and
    a program among the targets is never imported to wrap its functions."""
    from analyzers.dynamic.harvest import harvest

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_forever.py").write_text(
        "import time\n\n\ndef test_forever():\n    while True:\n        try:\n"
        "            time.sleep(0.05)\n        except Exception:\n            pass\n"
    )
    (tmp_path / "train.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('imported').write_text('yes')\n\n\n"
        "def loss(x):\n    return x\n\n\nfor step in range(3):\n    loss(step)\n"
    )
    started = time.monotonic()
    result = harvest(tmp_path, [("train.py", "loss")], seconds=2.0)
    assert time.monotonic() - started < 30
    assert result.ran and "train:loss" not in result.calls
    assert not (tmp_path / "imported").exists()


def test_the_harvest_runs_the_tests_that_name_the_target_first(tmp_path: Path) -> None:
    """A suite whose first file cannot be imported and whose next test outlasts the limit:
    run in directory order, pytest stops at the import error (or the slow test takes the
    whole limit) and nothing is recorded. The file that calls the flagged function runs
    first, and a file that fails to import is skipped, not the end of the session."""
    from analyzers.dynamic.harvest import harvest

    tests = tmp_path / "tests"
    tests.mkdir()
    (tmp_path / "harvest_order_lib.py").write_text(
        "import torch\n\n\ndef focal_term(p):\n    return (1 - p).log()\n\n\n"
        "class Unused:\n    pass\n"
    )
    (tests / "test_a_broken.py").write_text("import a_module_nobody_installed\n")
    (tests / "test_b_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(60)\n")
    (tests / "test_c_loss.py").write_text(
        "import torch\nfrom harvest_order_lib import focal_term\n\n\n"
        "def test_focal():\n    assert focal_term(torch.full((3,), 0.25)).shape == (3,)\n"
    )
    started = time.monotonic()
    result = harvest(tmp_path, [("harvest_order_lib.py", "focal_term")], seconds=6.0)
    assert time.monotonic() - started < 30
    calls = result.calls["harvest_order_lib:focal_term"]
    assert len(calls) == 1 and torch.equal(calls[0].args[0], torch.full((3,), 0.25))


def test_test_files_are_chosen_by_the_names_they_use(tmp_path: Path) -> None:
    from analyzers.dynamic.harvest_order import tests_naming

    tests = tmp_path / "tests"
    (tests / "unit").mkdir(parents=True)
    (tests / "test_other.py").write_text("from pkg.metrics import kl_div\n")
    (tests / "unit" / "test_both.py").write_text(
        "from pkg.metrics import kl_div, matthews_score  # kl_divergence in a comment\n"
    )
    (tests / "test_none.py").write_text("import math\nx = math.log(2)  # log, exp: too short\n")
    (tests / "helpers.py").write_text("from pkg.metrics import kl_div\n")  # not a test file
    names = {"kl_div", "matthews_score", "log"}
    assert tests_naming(tmp_path, ["tests"], names) == [
        "tests/unit/test_both.py",
        "tests/test_other.py",
    ]
    assert tests_naming(tmp_path, ["tests"], {"log"}) == []


def _harness_record(repo: Path, findings: list[dict[str, Any]], **job: Any) -> dict[str, Any]:
    """The one finding's dynamic record, through the real harness with the harvest on (30 s)
    and no fix stage."""
    from runners.local import LocalRunner

    result = LocalRunner().run(
        {
            "repo": str(repo),
            "findings": findings,
            "entries": [],
            "seed": 0,
            "search_seconds": 3.0,
            "finding_timeout": 120,
            "harvest_seconds": 30.0,
            "fix": False,
            **job,
        },
        timeout=300,
    )
    assert result.outcome == "ok", (result.reason, result.stderr[-2000:])
    (record,) = [r for r in result.records if r.get("stage") is None]
    return record


def test_the_harvest_runs_past_a_pytest_plugin_that_breaks_pytest(tmp_path: Path) -> None:
    """An old repository's declared dependencies bring a pytest plugin that pytest 9 refuses
    (an old-style `path` argument: kornia's pinned pytest-mypy), and then pytest starts no
    test at all. The harvest runs the tests again without the environment's plugins, so the
    call is recorded and the search starts from it."""
    from analyzers.static import scan_source

    site = tmp_path / "site"
    info = site / "oldplugin-0.7.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oldplugin\nVersion: 0.7.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\noldplugin = oldplugin_hooks\n")
    (site / "oldplugin_hooks.py").write_text(
        "def pytest_collect_file(path, parent):\n    return None\n"
    )
    repo = write_repo(
        tmp_path / "repo",
        {
            "plugged/__init__.py": "",
            "plugged/loss.py": (
                "import torch\n\n\ndef log_loss(p):\n    return -torch.log(p).mean()\n"
            ),
            "tests/test_loss.py": (
                "import torch\nfrom plugged.loss import log_loss\n\n\n"
                "def test_loss():\n    assert log_loss(torch.tensor([0.5, 0.25])) > 0\n"
            ),
        },
    )
    scan = scan_source((repo / "plugged/loss.py").read_text(), "plugged/loss.py")
    record = _harness_record(repo, [f.to_json() for f in scan.findings], dependencies=str(site))
    assert record["box"]["source"] == "harvested", record
    assert record["status"] == "confirmed", record  # log(0), a probability the box holds


def test_a_made_up_exponent_on_the_tests_own_values_is_still_commented(tmp_path: Path) -> None:
    """The tests call the focal term with gamma=2, where (1 - p) ** gamma is smooth; the
    made-up call tries gamma=0.5, and its trigger still fails when p is pulled into the box
    the tests' p was searched in. What failed is the exponent the tests fixed, not their
    data, so the proof is not marked as beyond the recorded values and stays an inline
    comment."""
    from analyzers.static import scan_source
    from analyzers.trust import comment_inline

    repo = write_repo(
        tmp_path,
        {
            "focalterm/__init__.py": "",
            "focalterm/loss.py": (
                "import torch\n\n\ndef focal_term(p, gamma: float = 2.0):\n"
                "    return torch.pow(1 - p, gamma).sum()\n"
            ),
            "tests/test_focal.py": (
                "import torch\nfrom focalterm.loss import focal_term\n\n\n"
                "def test_focal():\n    assert focal_term(torch.tensor([0.2, 0.7]), 2.0) > 0\n"
            ),
        },
    )
    (finding,) = scan_source((repo / "focalterm/loss.py").read_text(), "focalterm/loss.py").findings
    record = _harness_record(repo, [finding.to_json()])
    assert record["status"] == "confirmed" and record["box"]["source"] == "synthesised", record
    assert record["box"]["chosen"] == {"gamma": 0.5}
    assert "recorded_held" not in record["box"], record["box"]
    finding.status, finding.trigger = "confirmed", {"box": record["box"]}
    assert comment_inline(finding, "proven")


def test_test_files_beside_the_code_are_harvested(tmp_path: Path) -> None:
    """No tests folder: JAX and TensorFlow libraries keep `loss_test.py` beside `loss.py`."""
    from analyzers.dynamic.harvest import harvest

    (tmp_path / "besidelib").mkdir()
    (tmp_path / "besidelib" / "__init__.py").write_text("")
    (tmp_path / "besidelib" / "margin.py").write_text(
        "import torch\n\n\ndef margin_log(p):\n    return torch.log(p)\n"
    )
    (tmp_path / "besidelib" / "margin_test.py").write_text(
        "import torch\nfrom besidelib.margin import margin_log\n\n\n"
        "def test_margin():\n    assert margin_log(torch.tensor([0.5])).shape == (1,)\n"
    )
    result = harvest(tmp_path, [("besidelib/margin.py", "margin_log")], seconds=20.0)
    (call,) = result.calls["besidelib.margin:margin_log"]
    assert torch.equal(call.args[0], torch.tensor([0.5]))


@pytest.mark.parametrize(
    ("tests", "said"),
    [
        (
            {
                "tests/test_other.py": "from madeup.loss import other\n\n\n"
                "def test_other():\n    assert other(2.0) == 4.0\n"
            },
            "no-call",
        ),
        ({}, "no-tests"),
    ],
)
def test_a_proof_on_a_made_up_call_says_what_the_tests_offered(
    tmp_path: Path, tests: dict[str, str], said: str
) -> None:
    """No recorded call to start from: the proof is on values numcheck chose, and the
    comment says why it had none of the repository's own (its tests ran and never called
    the function, or there are no tests). A value the sandbox sends outside the known ones
    adds nothing to the comment."""
    from analyzers.report.summary import TESTS_SAID, proof_sentence
    from analyzers.static import scan_source

    repo = write_repo(
        tmp_path,
        {
            "madeup/__init__.py": "",
            "madeup/loss.py": (
                "import torch\n\n\ndef other(x):\n    return x * 2\n\n\n"
                "def log_loss(p):\n    return -torch.log(p).mean()\n"
            ),
            **tests,
        },
    )
    (finding,) = scan_source((repo / "madeup/loss.py").read_text(), "madeup/loss.py").findings
    record = _harness_record(repo, [finding.to_json()])
    assert record["status"] == "confirmed" and record["box"]["source"] == "synthesised", record
    assert record["box"]["tests"] == said
    finding.status = "confirmed"
    finding.trigger = {**record["trigger"], "box": record["box"]}
    assert proof_sentence(finding).endswith(TESTS_SAID[said])
    finding.trigger["box"] = {**record["box"], "tests": "<b>forged</b>"}
    assert "forged" not in proof_sentence(finding)
