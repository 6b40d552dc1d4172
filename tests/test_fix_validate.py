"""Validation of candidate fixes against real PyTorch code and the real search.

A small package is written to a temporary directory; its functions are confirmed with the real
`Searcher` on a configured entry, then each candidate is loaded as a patched copy of the module
and validated the way the harness will: reproducer at the trigger, search again on the patched
lines, static re-scan, value equivalence on in-domain inputs, finite gradients. Right candidates
are accepted; wrong ones (other values, or the NaN left in) are rejected with the reason.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch

from analyzers.dynamic.entries import EntryConfig, build_configured
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.search import Budget, Outcome, Searcher
from analyzers.fix.candidates import Candidate, candidates
from analyzers.fix.entry_hooks import (
    entry_gradients,
    entry_hooks,
    load_patched,
    rebind,
    reproduce,
    run_entry,
    sample_inputs,
    search_hook,
)
from analyzers.fix.site import FixRequest
from analyzers.fix.validate import (
    Hooks,
    Validation,
    check_equivalence,
    check_gradients,
    choose,
    fix_record,
    in_domain,
    patched_lines,
    tolerance,
    validate,
)
from analyzers.model import AnalysisResult, Finding
from analyzers.static import scan_source

PACKAGE = "fixval"
MODULE = f"{PACKAGE}.losses"
PATH = f"{PACKAGE}/losses.py"
SOURCE = """\
import torch
import torch.nn.functional as F


def log_probs(logits):
    return torch.log(F.softmax(logits, dim=-1))


def log_one_plus(x: torch.Tensor):
    return torch.log(1 + x)


def angle(c):
    return torch.acos(c)


def unit(x):
    return x / x.norm(dim=-1, keepdim=True)


class Head(torch.nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(dim, dim)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return torch.log(F.softmax(self.drop(self.lin(x)), dim=-1))
"""
BUDGET = Budget(seconds=2.0, evaluations=1500)
SCHEMA = Path(__file__).parent.parent / "analyzers" / "schemas" / "analysis-result.schema.json"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fixrepo")
    (root / PACKAGE).mkdir()
    (root / PACKAGE / "__init__.py").write_text("")
    (root / PATH).write_text(SOURCE)
    yield root
    while str(root.resolve()) in sys.path:
        sys.path.remove(str(root.resolve()))
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


@dataclass
class Case:
    finding: Finding
    entry: Entry
    outcome: Outcome
    normal: list[list[torch.Tensor]]
    directory: Path

    def hooks(self, candidate: Candidate) -> Hooks:
        return entry_hooks(
            candidate,
            self.entry,
            path=PATH,
            module_name=MODULE,
            trigger=self.outcome.inputs,
            normal_inputs=self.normal,
            directory=self.directory,
            budget=BUDGET,
        )

    def candidates(self) -> list[Candidate]:
        return candidates(SOURCE, FixRequest.from_finding(self.finding))

    def choose(self) -> tuple[Candidate | None, list[Validation]]:
        return choose(self.candidates(), self.hooks, op=self.finding.op)


def confirmed(
    repo: Path,
    tmp_path: Path,
    function: str,
    inputs: str,
    normal_box: tuple[float, float],
    init: dict[str, Any] | None = None,
) -> Case:
    """The finding in `function`, confirmed by the real search on a configured entry."""
    (finding,) = [
        f for f in scan_source(SOURCE, PATH).findings if f.function.split(".")[0] == function
    ]
    entry = build_configured(
        repo, EntryConfig(f"{MODULE}:{function}", (inputs,), init or {}), seed=0
    )
    lines = frozenset(range(finding.line, finding.end_line + 1))
    outcome = Searcher(entry, str(repo / PATH), lines, finding.op, budget=BUDGET).run()
    assert outcome.triggered, f"the search did not confirm {function}"
    normal = in_domain(
        lambda x: run_entry(entry, x), sample_inputs(entry, 6, seed=1, box=[normal_box])
    )
    assert normal
    return Case(finding, entry, outcome, normal, tmp_path)


def test_fused_log_softmax_is_accepted(repo: Path, tmp_path: Path) -> None:
    case = confirmed(repo, tmp_path, "log_probs", "float32[4,10] in [-100, 100]", (-5.0, 5.0))
    chosen, records = case.choose()
    assert chosen is not None and chosen.name == "log-softmax"
    (record,) = records
    assert record.accepted and record.rejected_because is None
    checks = {c.name: c for c in record.checks}
    assert checks["reproducer"].passed and checks["reproducer"].ran
    assert checks["static"].passed
    assert not checks["search"].ran and checks["search"].passed  # the log is gone
    assert checks["equivalence"].ran and checks["equivalence"].figures["compared"] > 0
    assert checks["equivalence"].figures["max_abs"] < 1e-4
    assert checks["gradients"].ran and checks["gradients"].figures["trigger"]
    record_json = fix_record(chosen, records)
    assert record_json["status"] == "validated" and record_json["kind"] == "stable-api"
    assert record_json["replacement"] == "    return F.log_softmax(logits, dim=-1)\n"
    json.dumps(record_json, allow_nan=False)
    # it is what Finding.fix holds, and the result schema accepts it
    result = AnalysisResult(".", None, None, {}, findings=[replace(case.finding, fix=record_json)])
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(result.to_json())


def test_a_candidate_that_changes_values_is_rejected(repo: Path, tmp_path: Path) -> None:
    case = confirmed(repo, tmp_path, "log_probs", "float32[4,10] in [-100, 100]", (-5.0, 5.0))
    right = case.candidates()[0]
    wrong_dim = replace(right, source=right.source.replace("dim=-1)", "dim=0)"))
    record = validate(wrong_dim, case.hooks(wrong_dim), op="log")
    assert not record.accepted
    assert record.rejected_because is not None
    assert record.rejected_because.startswith("equivalence: the patch changes in-domain values")
    equivalence = record.check("equivalence")
    assert equivalence is not None and equivalence.figures["max_abs"] > 0.1
    skipped = record.check("search")
    assert skipped is not None and not skipped.ran and "skipped" in skipped.reason
    # an epsilon far too large for the values it guards changes them too
    eps = next(c for c in case.candidates() if c.kind == "epsilon")
    big = replace(eps, source=eps.source.replace("+ 1e-6", "+ 0.1"))
    record = validate(big, case.hooks(big), op="log")
    assert not record.accepted and (record.rejected_because or "").startswith("equivalence")
    # while the dtype-sized epsilon passes every check
    assert validate(eps, case.hooks(eps), op="log").accepted
    json.dumps([r.to_json() for r in (record,)], allow_nan=False)


def test_a_candidate_that_leaves_the_nan_is_rejected(repo: Path, tmp_path: Path) -> None:
    case = confirmed(repo, tmp_path, "log_one_plus", "float32[4,8] in [-100, 100]", (-0.9, 10.0))
    cands = case.candidates()
    assert [c.name for c in cands][:2] == ["log1p", "clamp"]
    log1p = cands[0]
    assert log1p.watch == ("log1p",)
    # log1p(x) is still NaN below -1: the reproducer fails again and the search finds it
    dynamic = validate(log1p, case.hooks(log1p), op="log", checks_to_run=("reproducer", "search"))
    assert not dynamic.accepted
    assert (dynamic.rejected_because or "").startswith("reproducer: the reproducer still fails")
    search_only = validate(log1p, case.hooks(log1p), op="log", checks_to_run=("search",))
    assert (search_only.rejected_because or "").startswith(
        "search: the search still triggers log1p"
    )
    # the whole validation picks the clamp, and records why log1p lost
    chosen, records = case.choose()
    assert chosen is not None and chosen.kind == "clamp"
    assert not records[0].accepted and records[-1].accepted
    search = records[-1].check("search")
    assert search is not None and search.ran and search.figures["watched"] == ["log"]
    assert search.figures["runs"]["log"]["reached"]
    fix = fix_record(chosen, records)
    assert fix["rejected"][0]["name"] == "log1p"
    assert fix["rejected"][0]["rejected_because"].startswith("static")
    json.dumps(fix, allow_nan=False)


def test_a_clamp_onto_the_boundary_is_rejected(repo: Path, tmp_path: Path) -> None:
    """acos(c.clamp(-1, 1)) is finite forward but its gradient is inf at ±1 (pytorch#8069)."""
    case = confirmed(repo, tmp_path, "angle", "float32[4,8] in [-2, 2]", (-0.99, 0.99))
    right = next(c for c in case.candidates() if c.kind == "clamp")
    assert "c.clamp(-1 + 1e-6, 1 - 1e-6)" in right.source
    wrong = replace(right, source=right.source.replace("-1 + 1e-6, 1 - 1e-6", "-1, 1"))
    record = validate(wrong, case.hooks(wrong), op="acos", checks_to_run=("search",))
    assert not record.accepted
    search = record.check("search")
    assert search is not None and search.figures["runs"]["acos"]["where"] == "backward"
    assert not validate(wrong, case.hooks(wrong), op="acos").accepted  # static says so too
    chosen, records = case.choose()
    assert chosen is right or (chosen is not None and chosen.source == right.source)
    assert records[-1].accepted


def test_normalize_is_accepted_with_its_tolerance(repo: Path, tmp_path: Path) -> None:
    case = confirmed(repo, tmp_path, "unit", "float32[4,8] in [-1, 1]", (-3.0, 3.0))
    chosen, records = case.choose()
    assert chosen is not None and chosen.name == "normalize"
    assert "F.normalize(x, dim=-1)" in chosen.source
    equivalence = records[-1].check("equivalence")
    assert (
        equivalence is not None and equivalence.figures["rtol"] == tolerance("stable-api", "div")[1]
    )


def _log_softmax_candidates() -> list[Candidate]:
    """The candidates for line 6's `torch.log(F.softmax(logits, dim=-1))`."""
    request = FixRequest(
        PATH,
        6,
        6,
        "log",
        "torch.log(F.softmax(logits, dim=-1))",
        "F.softmax(logits, dim=-1)",
        column=11,
        end_column=47,
    )
    return candidates(SOURCE, request)


def test_no_valid_candidate_keeps_the_finding_as_it_is() -> None:
    always_fails = Hooks(reproducer=lambda: (True, "AssertionError: NaN"))
    cands = _log_softmax_candidates()
    chosen, records = choose(cands, lambda c: always_fails, op="log")
    assert chosen is None and len(records) == len(cands)
    record = fix_record(chosen, records)
    assert record["status"] == "none-validated"
    assert all(r["rejected_because"].startswith("reproducer") for r in record["tried"])


def test_an_original_finite_on_no_input_ends_the_tries_after_one_candidate() -> None:
    """The comparison had nothing to look at because of the original, not the candidate:
    every other candidate would be rejected the same way, so none is tried."""
    tried: list[str] = []

    def hooks(candidate: Candidate) -> Hooks:
        tried.append(candidate.name)
        return Hooks(
            reproducer=lambda: (False, "passes"),
            original=lambda x: torch.log(-x[0].abs() - 1),  # NaN everywhere
            patched=lambda x: torch.zeros_like(x[0]),
            normal_inputs=[[torch.rand(3)] for _ in range(4)],
            original_source=SOURCE,
        )

    cands = _log_softmax_candidates()
    assert len(cands) > 1
    chosen, records = choose(cands, hooks, op="log", required=("reproducer", "equivalence"))
    assert chosen is None and len(records) == 1 and tried == [cands[0].name]
    assert records[0].rejected_because == (
        "equivalence: no in-domain input where the original was finite to compare on"
    )
    assert "the others were not tried" in fix_record(chosen, records)["reason"]


def test_equivalence_only_compares_where_the_original_was_finite() -> None:
    def original(x: list[Any]) -> torch.Tensor:
        return torch.log(x[0])

    def patched(x: list[Any]) -> torch.Tensor:
        return torch.log(x[0].clamp_min(torch.finfo(x[0].dtype).tiny))

    inputs = [[torch.tensor([-1.0, 0.0, 0.5, 2.0])]]
    check = check_equivalence(original, patched, inputs, "clamp", "log")
    assert check.passed and check.figures["compared"] == 2 and check.figures["max_abs"] == 0.0

    def worse(x: list[Any]) -> torch.Tensor:
        return torch.log(x[0].abs() + 1)

    check = check_equivalence(original, worse, inputs, "stable-api", "log")
    assert not check.passed and "changes in-domain values" in check.reason


TF_SOURCE = """\
import tensorflow as tf


def log_probs(logits):
    return tf.math.log(tf.nn.softmax(logits, axis=-1))
"""


def test_tensorflow_log_softmax_is_accepted(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    package = "fixvaltf"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "losses.py").write_text(TF_SOURCE)
    path, module_name = f"{package}/losses.py", f"{package}.losses"
    try:
        (finding,) = scan_source(TF_SOURCE, path).findings
        entry = build_configured(
            tmp_path, EntryConfig(f"{module_name}:log_probs", ("float32[4,10] in [-100, 100]",)), 0
        )
        assert entry.framework == "tensorflow"
        lines = frozenset({finding.line})
        outcome = Searcher(entry, str(tmp_path / path), lines, "log", budget=BUDGET).run()
        assert outcome.triggered
        normal = sample_inputs(entry, 4, seed=1, box=[(-5.0, 5.0)])

        def hooks(candidate: Candidate) -> Hooks:
            module, file = load_patched(candidate.source, path, module_name, tmp_path)
            patched = rebind(entry, module)
            return Hooks(
                reproducer=lambda: reproduce(patched, outcome.inputs),
                search=search_hook(patched, str(file), patched_lines(candidate), budget=BUDGET),
                original=lambda x: run_entry(entry, x),
                patched=lambda x: run_entry(patched, x),
                gradients=lambda x: entry_gradients(patched, x),
                normal_inputs=normal,
                trigger=outcome.inputs,
            )

        cands = candidates(TF_SOURCE, FixRequest.from_finding(finding), strict=True)
        chosen, records = choose(cands, hooks, op="log")
        assert chosen is not None and chosen.name == "log-softmax"
        assert "tf.nn.log_softmax(logits, axis=-1)" in chosen.source
        equivalence = records[-1].check("equivalence")
        assert equivalence is not None and equivalence.ran and equivalence.passed
        # the clamp keeps log finite forward, but tiny probabilities are clamped: accepted
        # too when tried alone, and it is the search that watches its log
        clamp = next(c for c in cands if c.kind == "clamp")
        record = validate(clamp, hooks(clamp), op="log")
        search = record.check("search")
        assert search is not None and search.ran and search.figures["watched"] == ["log"]
    finally:
        while str(tmp_path.resolve()) in sys.path:
            sys.path.remove(str(tmp_path.resolve()))
        for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[name]


def test_a_module_with_dropout_keeps_its_weights_and_draws(repo: Path, tmp_path: Path) -> None:
    """A configured nn.Module in training mode: the patched copy gets the same weights and the
    same dropout masks, so the fused API compares equal."""
    case = confirmed(
        repo, tmp_path, "Head", "float32[4,8] in [-100, 100]", (-2.0, 2.0), init={"dim": 8}
    )
    assert isinstance(case.entry.fn, torch.nn.Module) and case.entry.fn.training
    chosen, records = case.choose()
    assert chosen is not None and chosen.name == "log-softmax"
    equivalence = records[-1].check("equivalence")
    assert equivalence is not None and equivalence.passed and equivalence.figures["max_abs"] < 1e-4


def test_float16_tolerance_is_a_few_ulps_not_a_blank_cheque() -> None:
    """A coarser dtype rounds more, so its tolerance is never finer than 8 ulps (7.8e-3 in
    float16); but a patch that moves values by 5% in float16 is still a different model."""
    atol, rtol = tolerance("stable-api", "log", "float16")
    assert (atol, rtol) == (8 * 2.0**-10, 8 * 2.0**-10)
    assert tolerance("stable-api", "log", "float32") == (1e-5, 1e-4)  # float32 unchanged
    x = [torch.linspace(0.5, 4.0, 16, dtype=torch.float16)]
    rounding = check_equivalence(
        lambda s: s[0] * 2, lambda s: (s[0].float() * 2).half(), [x], "stable-api", "log", "float16"
    )
    assert rounding.passed, rounding.reason
    moved = check_equivalence(
        lambda s: s[0] * 2, lambda s: s[0] * 2.1, [x], "stable-api", "log", "float16"
    )
    assert not moved.passed and "changes in-domain values" in moved.reason


def test_a_gradient_the_original_already_lost_is_not_blamed_on_the_patch() -> None:
    """kornia's focal loss: the log-sigmoid fix was rejected because another op of the same
    function (pow(sigmoid, gamma)) has an infinite gradient at some normal inputs, with or
    without the patch. Only what the patch makes worse, or the trigger, rejects it."""
    trigger, good, bad = [torch.tensor([0.0])], [torch.tensor([1.0])], [torch.tensor([2.0])]

    def patched(x: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.tensor([float("inf")]) if float(x[0]) == 2.0 else torch.tensor([1.0])]

    def original_bad_too(x: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.tensor([float("inf")]) if float(x[0]) in (0.0, 2.0) else x[0]]

    def original_fine_there(x: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.tensor([float("inf")]) if float(x[0]) == 0.0 else x[0]]

    inherited = check_gradients(patched, trigger, [good, bad], original_bad_too)
    assert inherited.passed and inherited.figures["inherited"] == 1
    worse = check_gradients(patched, trigger, [good, bad], original_fine_there)
    assert not worse.passed and "normal input 2" in worse.reason
    at_trigger = check_gradients(
        lambda x: [torch.tensor([float("nan")])], trigger, [good], original_bad_too
    )
    assert not at_trigger.passed and "trigger" in at_trigger.reason
