"""The search's objectives and stages: the ops whose objective reads more than the operand,
GRIST's linear solve, batched restarts (and that batch mixing never confirms anything), and
determinism under a seed. Small entries written per test; the whole file runs in seconds."""

from __future__ import annotations

import math
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from analyzers.dynamic.entries import EntryConfig, build_configured
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.probe import OpProbe
from analyzers.dynamic.search import STAGES, Budget, Outcome, Searcher, _concat
from analyzers.dynamic.suspect import CallSite, call_site, has_loss, suspect_loss

PACKAGE = "stagecases"
MODULE = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F

    CALLS = [0]


    def heading(traj, target):
        d = traj[:, 1:] - traj[:, :-1]
        h = torch.atan2(d[..., 1], d[..., 0])  # @atan2
        return (1.0 - torch.cos(h - target)).mean()


    def nearest(a, b):
        return torch.cdist(a, b).min()  # @cdist


    def multigamma(x):
        return torch.mvlgamma(x, p=3).sum()  # @mvlgamma


    def token_loss(logits, target):
        return F.cross_entropy(logits, target, ignore_index=0)  # @cross-entropy


    def spectrum(a):
        w, v = torch.linalg.eigh(a @ a.mT)  # @eigh
        return w.sum() + v.sum()


    def balanced(x):
        signs = torch.tensor([1.0, -1.0] * (x.shape[-1] // 2))
        return torch.log((x * signs).sum(-1) + 150.0)  # @solve


    def rowwise(x):
        CALLS[0] += 1
        return torch.log(x + 0.97)  # @rowwise


    def batch_stat(x):
        CALLS[0] += 1
        total = x.sum(0, keepdim=True)
        return x * torch.log(2.5 - total)  # @batch-stat


    def scalar(x):
        return torch.log(x + 0.9).mean()  # @scalar


    def pairwise(x, adjacency):
        return torch.log(adjacency @ x + 0.97)  # @pairwise

    def root_of_log(x):
        y = torch.log(x)  # @first
        return torch.sqrt(y * y + 1.0)  # @passes-on

    def ratio_of_log(x):
        y = torch.log(x)  # @numerator-first
        return y / (x * x + 1.0)  # @divides-on
    """)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stages")
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    (root / PACKAGE).mkdir()
    (root / PACKAGE / "__init__.py").write_text("", encoding="utf-8")
    (root / PACKAGE / "cases.py").write_text(MODULE, encoding="utf-8")
    return root


def _line(root: Path, marker: str) -> frozenset[int]:
    text = (root / PACKAGE / "cases.py").read_text(encoding="utf-8").splitlines()
    return frozenset(n for n, line in enumerate(text, 1) if line.endswith(f"# {marker}"))


def _entry(root: Path, function: str, *inputs: str) -> Entry:
    return build_configured(root, EntryConfig(f"{PACKAGE}.cases:{function}", inputs), seed=0)


def _searcher(
    root: Path, entry: Entry, marker: str, op: str, seed: int = 0, budget: Budget | None = None
) -> Searcher:
    return Searcher(
        entry,
        str(root / PACKAGE / "cases.py"),
        _line(root, marker),
        op,
        seed=seed,
        budget=budget or Budget(seconds=20, evaluations=3000),
    )


def _calls(root: Path) -> list[int]:
    calls: list[int] = sys.modules[f"{PACKAGE}.cases"].CALLS
    return calls


# ---------------------------------------------------------------------------- objectives
def test_every_new_objective_exists() -> None:
    for op in ("atan2", "cdist", "mvlgamma", "cross_entropy", "linalg"):
        assert has_loss(op), op


def test_atan2_probe_records_both_operands_and_the_loss_uses_both(source: Path) -> None:
    entry = _entry(source, "heading", "float32[1,3,2]", "float32[1,2]")
    probe = OpProbe(str(source / PACKAGE / "cases.py"), _line(source, "@atan2"), "atan2")
    # displacements (dx, dy): (3, 0) and (0.5, 0.25); |dy| alone is smallest at the first
    traj = torch.tensor([[[0.0, 0.0], [3.0, 0.0], [3.5, 0.25]]])
    with probe:
        entry.call([traj, torch.zeros(1, 2)])
    (hit,) = probe.hits
    assert len(hit.call.others) == 1
    assert torch.equal(hit.call.others[0], torch.tensor([[3.0, 0.5]]))
    assert float(suspect_loss("atan2", hit.operand, call=hit.call)) == pytest.approx(0.75)
    assert (
        float(
            suspect_loss("atan2", torch.tensor([0.0]), call=CallSite(others=(torch.tensor([0.0]),)))
        )
        <= 0
    )


def test_atan2_just_off_the_origin_is_confirmed_in_its_gradient(source: Path) -> None:
    """torch masks atan2's gradient at exactly (0, 0); 1 / (x^2 + y^2) still overflows for
    displacements around 1e-20, which only shrinking the point towards 0 reaches."""
    entry = _entry(
        source, "heading", "float32[2,6,2] in [-50, 50]", "float32[2,5] in [-3.14, 3.14]"
    )
    outcome = _searcher(source, entry, "@atan2", "atan2").run()
    assert outcome.triggered and outcome.where == "backward", outcome
    d = outcome.inputs[0][:, 1:] - outcome.inputs[0][:, :-1]
    assert 0 < float(d.abs().amax()) < 1e-15


def test_cdist_objective_is_the_smallest_squared_distance(source: Path) -> None:
    a = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    b = torch.tensor([[3.0, 1.0], [1.0, 2.0]])
    site = call_site("cdist", "cdist", (a, b), {})
    assert float(suspect_loss("cdist", a, call=site)) == pytest.approx(1.0)
    assert float(suspect_loss("cdist", a, call=call_site("cdist", "cdist", (a, a), {}))) == 0
    # pdist: pairs within one set, never a point with itself
    assert float(suspect_loss("cdist", a, call=call_site("cdist", "pdist", (a,), {}))) == 2.0
    x = a.clone().requires_grad_()
    (grad,) = torch.autograd.grad(suspect_loss("cdist", x, call=site), x)
    assert float(grad.abs().sum()) > 0


def test_mvlgamma_objective_reads_p(source: Path) -> None:
    x = torch.tensor([1.5, 2.0])
    three = call_site("mvlgamma", "mvlgamma", (x,), {"p": 3})
    assert float(suspect_loss("mvlgamma", x, call=three)) == pytest.approx(0.5)
    assert float(suspect_loss("mvlgamma", torch.tensor([1.0]), call=three)) <= 0
    assert (
        float(
            suspect_loss(
                "mvlgamma", torch.tensor([1.0]), call=call_site("mvlgamma", "mvlgamma", (x, 1), {})
            )
        )
        > 0
    )
    entry = _entry(source, "multigamma", "float32[8] in [0.8, 6]")
    outcome = _searcher(source, entry, "@mvlgamma", "mvlgamma").run()
    assert outcome.triggered and float(outcome.inputs[0].amin()) <= 1.0


def test_cross_entropy_objective_counts_the_targets_not_ignored(source: Path) -> None:
    logits = torch.zeros(4, 3)
    target = torch.tensor([0, 2, 0, 1])
    site = call_site("cross_entropy", "cross_entropy", (logits, target), {"ignore_index": 0})
    assert float(suspect_loss("cross_entropy", logits, call=site)) == 2
    weighted = call_site(
        "cross_entropy",
        "cross_entropy",
        (logits, target),
        {"ignore_index": 0, "weight": torch.tensor([1.0, 0.0, 0.5])},
    )
    assert float(suspect_loss("cross_entropy", logits, call=weighted)) == 0.5
    summed = call_site("cross_entropy", "cross_entropy", (logits, target), {"reduction": "sum"})
    assert suspect_loss("cross_entropy", logits, call=summed) is None  # cannot be 0/0
    entry = _entry(source, "token_loss", "float32[4,3] in [-5, 5]", "int64[4] in [0, 2]")
    outcome = _searcher(source, entry, "@cross-entropy", "cross_entropy").run()
    assert outcome.triggered and outcome.where == "forward"
    assert bool((outcome.inputs[1] == 0).all())


@pytest.mark.parametrize(
    ("name", "bad", "good"),
    [
        ("inv", [[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 2.0]]),
        ("logdet", [[1.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]),
        ("cholesky", [[1.0, 0.0], [0.0, -1.0]], [[2.0, 1.0], [1.0, 2.0]]),
        ("eigh", [[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 2.0]]),
        ("svd", [[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 3.0]]),
    ],
)
def test_linalg_objective_is_the_distance_to_where_the_function_breaks(
    name: str, bad: list[list[float]], good: list[list[float]]
) -> None:
    site = CallSite(name)
    assert float(suspect_loss("linalg", torch.tensor(bad), call=site)) <= 0, name
    assert float(suspect_loss("linalg", torch.tensor(good), call=site)) > 0, name


def test_eigh_with_repeated_eigenvalues_is_confirmed(source: Path) -> None:
    entry = _entry(source, "spectrum", "float32[3,3] in [-1, 1]")
    outcome = _searcher(source, entry, "@eigh", "linalg").run()
    assert outcome.triggered and outcome.where == "backward", outcome


# ---------------------------------------------------------------------------- linear solve
def test_linear_solve_sits_between_snapping_and_gradient_steps() -> None:
    assert STAGES.index("snap") < STAGES.index("solve") < STAGES.index("gradient")


def test_linear_solve_reaches_the_boundary_in_one_step(source: Path) -> None:
    """log(sum(x * [1, -1, ...]) + 150): the operand is linear, so from x = 0 (operand 150)
    x - L g / |g|^2 lands the operand on 0 exactly: log(0) = -inf."""
    entry = _entry(source, "balanced", "float32[16] in [-10, 10]")
    searcher = _searcher(source, entry, "@solve", "log")
    searcher.started = time.perf_counter()
    searcher.best = (150.0, [torch.zeros(16)])
    first = next(iter(searcher._solve()))
    assert float((first[0] * torch.tensor([1.0, -1.0] * 8)).sum()) == pytest.approx(-150.0)
    assert searcher.evaluate(first).forward


def test_linear_solve_confirms_what_restarts_and_snapping_miss(source: Path) -> None:
    """Zeros and equal values give the operand 150, a box corner gets there only if all 16
    signs of the best draw line up, uniform draws would need a 6-sigma sum. The solve (with
    the coordinates the box pins left out) gets there in a few runs; without it the
    gradient stage would (`stage` would say so)."""
    entry = _entry(source, "balanced", "float32[16] in [-10, 10]")
    outcome = _searcher(source, entry, "@solve", "log").run()
    assert outcome.triggered and outcome.stage == "solve", outcome
    assert outcome.evaluations < Budget().restarts + 40


# ---------------------------------------------------------------------------- batched restarts
def _run(
    root: Path, function: str, marker: str, batch: int, seed: int = 0, evaluations: int = 3000
) -> tuple[Outcome, int, Searcher]:
    entry = _entry(
        root,
        function,
        "float32[2,4] in [-1, 1]" if function != "batch_stat" else "float32[2,4] in [0, 1]",
    )
    searcher = _searcher(
        root,
        entry,
        marker,
        "log",
        seed=seed,
        budget=Budget(seconds=20, evaluations=evaluations, batch=batch),
    )
    calls = _calls(root)
    calls[0] = 0
    outcome = searcher.run()
    return outcome, calls[0], searcher


def test_batched_restarts_find_the_same_restart_in_fewer_calls(source: Path) -> None:
    batched, batched_calls, searcher = _run(source, "rowwise", "@rowwise", batch=8, seed=22)
    single, single_calls, _ = _run(source, "rowwise", "@rowwise", batch=1, seed=22)
    assert searcher._batch_size() == 8
    assert batched.triggered and single.triggered and batched.stage == "restarts"
    assert batched.inputs[0].shape == (2, 4)  # one restart, not a batch of them
    assert torch.equal(batched.inputs[0], single.inputs[0])
    assert batched_calls < single_calls, (batched_calls, single_calls)
    assert searcher.evaluate(batched.inputs).forward  # reproduces alone


def test_an_entry_without_a_batch_dimension_in_its_output_is_not_batched(source: Path) -> None:
    """log(x + 0.9).mean(): the first batched run shows the output has no batch rows; from
    then on the search goes one draw at a time, and still finds its trigger alone."""
    entry = _entry(source, "scalar", "float32[2,4] in [-1, 1]")
    searcher = _searcher(source, entry, "@scalar", "log", seed=22)
    outcome = searcher.run()
    assert searcher._batch_size() == 1
    assert outcome.triggered and outcome.stage == "restarts"
    assert outcome.inputs[0].shape == (2, 4)
    flat = _entry(source, "scalar", "float32[8] in [-1, 1]", "float32[3] in [0, 1]")
    assert _searcher(source, flat, "@scalar", "log")._batch_size() == 1  # no shared batch


def test_a_trigger_made_by_mixing_restarts_is_never_reported(source: Path) -> None:
    """x * log(2.5 - sum_over_batch(x)) with x in [0, 1] and a batch of 2: alone the sum is
    at most 2 and the log is safe; 8 restarts in one batch sum to about 8 and the log is NaN.
    The batched run fails, none of its restarts fails alone, and the search
    must end without a trigger."""
    outcome, _, searcher = _run(source, "batch_stat", "@batch-stat", batch=8, evaluations=400)
    assert searcher._batch_size() == 8
    generator = torch.Generator().manual_seed(0)
    from analyzers.dynamic.tensors import sample

    draws = [[sample(spec, generator) for spec in searcher.entry.specs] for _ in range(8)]
    assert searcher.evaluate(_concat(draws), chunks=8).forward  # mixing does fail...
    assert not outcome.triggered, outcome  # ...but it confirms nothing
    assert outcome.reached and outcome.best_loss > 0


# ---------------------------------------------------------------------------- determinism
def test_the_new_stages_are_deterministic_under_a_seed(source: Path) -> None:
    runs = [_run(source, "rowwise", "@rowwise", batch=8, seed=11)[0] for _ in range(2)]
    entry = _entry(source, "balanced", "float32[16] in [-10, 10]")
    runs += [_searcher(source, entry, "@solve", "log", seed=5).run() for _ in range(2)]
    for first, second in (runs[:2], runs[2:]):
        assert first.triggered and second.triggered
        assert (first.stage, first.where, first.evaluations) == (
            second.stage,
            second.where,
            second.evaluations,
        )
        assert all(torch.equal(a, b) for a, b in zip(first.inputs, second.inputs, strict=True))
        assert first.trace == second.trace
    other = _run(source, "rowwise", "@rowwise", batch=8, seed=12)[0]
    assert not torch.equal(other.inputs[0], runs[0].inputs[0])  # the seed matters


def test_tensorflow_probe_sees_atan2_operands_and_the_sqrt_inside_tf_norm(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    from analyzers.dynamic.tf_backend import TFProbe

    path = tmp_path / "tfcode.py"
    path.write_text(
        textwrap.dedent("""\
        import tensorflow as tf


        def both(y, x, g):
            a = tf.math.atan2(y, x)
            n = tf.norm(g, axis=-1)
            return a, n
        """),
        encoding="utf-8",
    )
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
    both = namespace["both"]
    y, x = tf.constant([0.0, 1.0]), tf.constant([2.0, 0.0])
    with (
        TFProbe(str(path), frozenset({5}), "atan2") as atan2,
        TFProbe(str(path), frozenset({6}), "sqrt") as sqrt,
    ):
        both(y, x, tf.zeros([2, 3]))  # type: ignore[operator]
    (hit,) = atan2.hits
    assert hit.others and hit.others[0] is x
    assert len(sqrt.hits) == 1  # tf.norm's own math_ops.sqrt, on the user's line
    assert math.isclose(float(tf.reduce_sum(sqrt.hits[0].operand)), 0.0)


@pytest.fixture
def chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many restarts each evaluation of a search carries, in order."""
    counts: list[int] = []
    evaluate = Searcher.evaluate

    def recording(
        self: Searcher, inputs: Any, want_grad: bool = False, chunks_: int = 1, **kwargs: Any
    ) -> Any:
        counts.append(kwargs.get("chunks", chunks_))
        return evaluate(self, inputs, want_grad, kwargs.get("chunks", chunks_))

    monkeypatch.setattr(Searcher, "evaluate", recording)
    return counts


def test_a_failing_batch_tries_its_closest_restart_alone_first(
    source: Path, chunks: list[int]
) -> None:
    """The batch's per-restart suspect losses say which draw came closest: that one goes
    alone right after the batch (here it is the trigger), instead of halving the batch down
    to it; the others would follow alone, closest first. Batches double from one draw to
    `Budget.batch`."""
    batched, _, _ = _run(source, "rowwise", "@rowwise", batch=8, seed=22)
    assert batched.triggered and batched.stage == "restarts"
    assert chunks[0] == 1 and 8 in chunks
    assert chunks[-2] > 1 and chunks[-1] == 1, chunks  # the failing batch, its closest alone
    batches = [c for c in chunks if c > 1]  # restart batches 2, 4, 8, 8, ..., never halvings
    assert batches == [min(2**i, 8) for i in range(1, len(batches) + 1)], chunks


def test_an_entry_that_cannot_take_a_batch_pays_two_evaluations_for_the_test(
    source: Path, chunks: list[int]
) -> None:
    """adjacency @ x with adjacency [2, 2]: two restarts concatenated do not multiply. The
    first batched run, the test of batching, holds two draws, which then go alone; from then
    on one draw per call, and the batch cost two evaluations, not `Budget.batch`."""
    entry = _entry(source, "pairwise", "float32[2,4] in [-1, 1]", "float32[2,2] in [0, 1]")
    searcher = _searcher(source, entry, "@pairwise", "log", seed=3)
    outcome = searcher.run()
    assert outcome.triggered and outcome.stage == "restarts", outcome
    assert searcher._batch_size() == 1
    assert chunks[:2] == [1, 2] and all(c == 1 for c in chunks[2:]), chunks
    assert outcome.evaluations == len(chunks) + 1
    assert outcome.inputs[1].shape == (2, 2)


def test_an_op_that_only_passes_on_an_earlier_nan_is_not_proven(source: Path) -> None:
    """sqrt(y * y + 1) of y = log(x) is at least 1 wherever y is a number; it is NaN only
    where the log above made it so, and sqrt's derivative read at a NaN is NaN whatever sqrt
    does. That once "proved" the sqrt in the backward pass; the log holds the proof."""
    entry = _entry(source, "root_of_log", "float32[4] in [-2, 2]")
    budget = Budget(seconds=3, evaluations=400)
    assert not _searcher(source, entry, "@passes-on", "sqrt", budget=budget).run().triggered
    first = _searcher(source, entry, "@first", "log", budget=budget).run()
    assert first.triggered and first.where == "forward"


def test_a_division_that_only_passes_on_an_earlier_nan_numerator_is_not_proven(
    source: Path,
) -> None:
    """log(x) / (x * x + 1): the divisor is at least 1; the quotient is NaN or -inf only where
    the log above made the numerator so. Only the divisor was checked once, so a NaN made on
    an earlier line "proved" the division; the log holds the proof."""
    entry = _entry(source, "ratio_of_log", "float32[4] in [-2, 2]")
    budget = Budget(seconds=3, evaluations=400)
    assert not _searcher(source, entry, "@divides-on", "div", budget=budget).run().triggered
    first = _searcher(source, entry, "@numerator-first", "log", budget=budget).run()
    assert first.triggered and first.where == "forward"
