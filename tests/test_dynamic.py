"""The dynamic pass in process: specs, suspect losses, the probe, entries, search, reproducers.

Everything runs real PyTorch on the small packages in `tests/fixtures/dynamic/dynfix`; risky
lines there carry `# @marker` comments so a test names the line it watches instead of a
number that drifts when the fixture is edited.
"""

from __future__ import annotations

import ast
import math
import os
import runpy
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode

from analyzers.catalogue import CATALOGUE
from analyzers.dynamic.entries import EntryConfig, EntryError, build_configured, synthesise
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.minimise import base_value, minimise
from analyzers.dynamic.objects import ObjectCall
from analyzers.dynamic.probe import OpProbe
from analyzers.dynamic.reproducer import Target, render
from analyzers.dynamic.search import Budget, Outcome, Searcher
from analyzers.dynamic.specs import (
    DEFAULT_HI,
    DEFAULT_LO,
    InputSpec,
    SpecError,
    default_spec,
    parse_spec,
)
from analyzers.dynamic.suspect import has_loss, op_names, operand_of, suspect_loss
from analyzers.dynamic.tensors import sample

FIXTURES = Path(__file__).parent / "fixtures" / "dynamic"
SEARCH = "dynfix/search_cases.py"
ENTRIES = "dynfix/entry_cases.py"
PROBED = "dynfix/probe_target.py"


@pytest.fixture(autouse=True, scope="module")
def _fixture_packages() -> Iterator[None]:
    """Make `dynfix` importable for this module only, and forget it afterwards, so no other
    test sees the fixture package or the sys.path entry the entry builder adds."""
    root = str(FIXTURES.resolve())
    sys.path.insert(0, root)
    yield
    while root in sys.path:
        sys.path.remove(root)
    for name in [m for m in sys.modules if m == "dynfix" or m.startswith("dynfix.")]:
        del sys.modules[name]


def marker_line(rel: str, marker: str) -> int:
    """The 1-based line of `# @marker` in a fixture file."""
    lines = (FIXTURES / rel).read_text(encoding="utf-8").splitlines()
    found = [i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(found) == 1, f"{marker} in {rel}: {found}"
    return found[0]


def searcher(
    entry: Entry, rel: str, marker: str, op: str, seed: int = 0, budget: Budget | None = None
) -> Searcher:
    return Searcher(
        entry,
        str(FIXTURES / rel),
        frozenset({marker_line(rel, marker)}),
        op,
        seed=seed,
        budget=budget,
    )


def search(
    function: str, marker: str, op: str, seed: int = 0, budget: Budget | None = None
) -> tuple[Entry, Searcher, Outcome]:
    entry = synthesise(FIXTURES, SEARCH, function, seed)
    found = searcher(entry, SEARCH, marker, op, seed, budget)
    return entry, found, found.run()


# ---------------------------------------------------------------- specs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("float32[4,10] in [-100, 100]", InputSpec("float32", (4, 10), -100.0, 100.0, "config")),
        ("int64[4] in [0, 9]", InputSpec("int64", (4,), 0.0, 9.0, "config")),
        ("float64[ 2 , 5 ]in[-1e3,2.5e3]", InputSpec("float64", (2, 5), -1000.0, 2500.0, "config")),
        ("bool[2,3]", InputSpec("bool", (2, 3), 0.0, 1.0, "default")),
        ("float32[]", InputSpec("float32", (), DEFAULT_LO, DEFAULT_HI, "default")),
        ("float16[8]", InputSpec("float16", (8,), DEFAULT_LO, DEFAULT_HI, "default")),
    ],
)
def test_parse_spec_reads_the_documented_forms(text: str, expected: InputSpec) -> None:
    """Without `in [lo, hi]` the box is the stated default, and says so (source)."""
    assert parse_spec(text) == expected


def test_spec_survives_describe_and_json() -> None:
    """The box shown in comments must parse back to the box that was searched."""
    spec = parse_spec("float32[4,10] in [-100, 2.5]")
    assert spec.describe() == "float32[4,10] in [-100, 2.5]"
    assert parse_spec(spec.describe()) == spec
    assert InputSpec.from_json(spec.to_json()) == spec
    assert default_spec().describe() == "float32[4,8] in [-100, 100]"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "float32",
        "float32(4,10)",
        "float32[4,x]",
        "float32[4,10] in [-1]",
        "float32[4,10] between 0 and 1",
        "float32[4,10] in [0, 1] extra",
    ],
)
def test_parse_spec_rejects_malformed_text_with_the_accepted_form(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    message = str(info.value)
    assert repr(text) in message
    assert "dtype[shape] in [lo, hi]" in message


@pytest.mark.parametrize("text", ["float8[4]", "uint8[4] in [0, 255]", "complex64[2]"])
def test_parse_spec_rejects_unknown_dtypes_and_lists_the_known_ones(text: str) -> None:
    with pytest.raises(SpecError, match=r"unknown dtype '\w+'") as info:
        parse_spec(text)
    assert "float32" in str(info.value) and "int64" in str(info.value)


def test_parse_spec_rejects_an_empty_box() -> None:
    with pytest.raises(SpecError, match=r"empty box .*: 5 > 1"):
        parse_spec("float32[2] in [5, 1]")
    assert parse_spec("float32[2] in [3, 3]").lo == 3.0  # a single point is a valid box


@pytest.mark.parametrize("text", ["float32[2] in [1..5, 9]", "float32[2] in [e, 1]"])
def test_parse_spec_rejects_unreadable_bounds_as_spec_errors(text: str) -> None:
    with pytest.raises(SpecError):
        parse_spec(text)


@pytest.mark.parametrize("text", ["float32[3] in [-inf, inf]", "float32[3] in [0, inf]"])
def test_infinite_boxes_are_refused_or_sampled_finitely(text: str) -> None:
    """Either answer is fine; searching from NaN starting points is not."""
    try:
        spec = parse_spec(text)
    except SpecError:
        return
    assert bool(torch.isfinite(sample(spec, torch.Generator().manual_seed(0))).all())


def test_sample_stays_in_the_box_with_inclusive_integer_ends() -> None:
    generator = torch.Generator().manual_seed(0)
    floats = sample(parse_spec("float64[200] in [-2, 3]"), generator)
    assert floats.dtype == torch.float64 and floats.min() >= -2 and floats.max() <= 3
    ints = sample(parse_spec("int64[400] in [0, 2]"), generator)
    assert ints.dtype == torch.int64 and set(ints.tolist()) == {0, 1, 2}
    mask = sample(parse_spec("bool[400]"), generator)
    assert mask.dtype == torch.bool and set(mask.tolist()) == {False, True}
    again = sample(parse_spec("float64[200] in [-2, 3]"), torch.Generator().manual_seed(0))
    assert torch.equal(again, floats)


# ---------------------------------------------------------------- suspect losses


# op -> (operand in the invalid domain, a safe operand); the loss must be <= 0 and > 0.
DOMAIN_CASES: dict[str, tuple[Any, Any]] = {
    "log": (0.0, 1.0),
    "log2": (0.0, 1.0),
    "log10": (0.0, 1.0),
    "log1p": (-1.0, 0.0),
    "logit": (0.0, 0.5),
    "sqrt": (0.0, 4.0),
    "rsqrt": (0.0, 4.0),
    "reciprocal": (0.0, 2.0),
    "div": (0.0, 2.0),
    "fmod": (0.0, 2.0),
    "exp": (200.0, 1.0),
    "exp2": (200.0, 1.0),
    "expm1": (200.0, 1.0),
    "cosh": (-200.0, 1.0),
    "sinh": (200.0, -1.0),
    "pow": (-1.0, 4.0),
    "acos": (1.0, 0.5),
    "asin": (-1.0, 0.5),
    "atanh": (1.0, 0.0),
    "erfinv": (-1.0, 0.5),
    "acosh": (0.5, 2.0),
    "lgamma": (-2.0, 1.5),
    "digamma": (-3.0, 1.5),
    "binary_cross_entropy": (1.0, 0.5),
    "kl_div": (0.0, 1.0),
    "arange": (0.0, 2.0),
    "atan2": (0.0, 1.0),  # the operand alone (y); with x too: tests/test_search_stages.py
    "cdist": ([[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]]),  # rows as points
    "mvlgamma": (0.0, 1.0),  # p = 1 when the call gives none
    "linalg": ([[1.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]),  # singular vs identity
    "softmax": ([[-math.inf, -math.inf], [0.0, 1.0]], [[0.0, 1.0], [-math.inf, 3.0]]),
}
# Ops whose objective needs more than one operand or is not numeric: the search skips them
# (the harness says so) until suspect.py implements them.
NOT_SEARCHED: set[str] = set()
NEEDS_THE_CALL = {"cross_entropy"}  # counts targets: tests/test_search_stages.py
RISKY_WITH_LOSS = sorted(
    op for op, spec in CATALOGUE.by_op.items() if spec.kind == "risky" and has_loss(op)
)


def test_every_risky_op_with_a_suspect_loss_has_an_implementation_and_a_case() -> None:
    """A catalogue entry naming a loss that suspect.py does not implement would make the
    search skip the op silently; a new op without a case here would go untested."""
    named = {
        op for op, spec in CATALOGUE.by_op.items() if spec.kind == "risky" and spec.suspect_loss
    }
    assert {op for op in named if not has_loss(op)} == NOT_SEARCHED
    assert set(RISKY_WITH_LOSS) == set(DOMAIN_CASES) | NEEDS_THE_CALL


@pytest.mark.parametrize("op", [op for op in RISKY_WITH_LOSS if op not in NEEDS_THE_CALL])
def test_suspect_loss_is_nonpositive_exactly_in_the_invalid_domain(op: str) -> None:
    bad, good = DOMAIN_CASES[op]
    at_bad = suspect_loss(op, torch.tensor(bad, dtype=torch.float32))
    at_good = suspect_loss(op, torch.tensor(good, dtype=torch.float32))
    assert at_bad.dim() == 0 and at_good.dim() == 0, "the search needs a scalar"
    assert float(at_bad) <= 0, f"{op} fails at {bad} but its loss is {float(at_bad)}"
    assert float(at_good) > 0, f"{op} is fine at {good} but its loss is {float(at_good)}"


@pytest.mark.parametrize(
    "op",
    [op for op in RISKY_WITH_LOSS if op not in ("softmax", "cross_entropy", "linalg", "cdist")],
)
def test_suspect_loss_gives_the_gradient_stage_a_direction(op: str) -> None:
    """Sign-gradient steps need a non-zero gradient at an ordinary (safe) point."""
    x = torch.tensor([DOMAIN_CASES[op][1], DOMAIN_CASES[op][1] + 0.25], requires_grad=True)
    (grad,) = torch.autograd.grad(suspect_loss(op, x), x)
    assert bool(torch.isfinite(grad).all()) and float(grad.abs().sum()) > 0


def test_exp_threshold_follows_the_dtype() -> None:
    """exp overflows above 11.09 in float16 but only above 88.72 in float32."""
    twelve = torch.tensor(12.0)
    assert float(suspect_loss("exp", twelve, "float16")) <= 0
    assert float(suspect_loss("exp", twelve, "float32")) > 0
    assert float(suspect_loss("exp", torch.tensor(88.0), "float32")) > 0
    assert float(suspect_loss("exp", torch.tensor(89.0), "float32")) <= 0


def test_suspect_loss_takes_the_worst_element() -> None:
    """One bad element in a batch is a failure, whatever the others are."""
    assert float(suspect_loss("log", torch.tensor([[3.0, 2.0], [5.0, 0.0]]))) <= 0
    assert float(suspect_loss("log", torch.tensor([[3.0, 2.0], [5.0, 0.5]]))) == 0.5


def test_div_names_cover_functions_methods_and_operators() -> None:
    names = op_names("div")
    assert {
        "div",
        "divide",
        "true_divide",
        "__rdiv__",
        "__rtruediv__",
        "__truediv__",
        "__floordiv__",
        "div_",
    } <= names
    assert "log" not in names and "div" not in op_names("log")
    assert {"log", "log_"} <= op_names("log")


class _Recorder(TorchFunctionMode):
    """Records how real torch calls reach __torch_function__ (name, args, kwargs)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        self.calls.append((getattr(func, "__name__", ""), args, dict(kwargs or {})))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(
    ("form", "call"),
    [
        ("a / b", lambda a, b: a / b),
        ("torch.div(a, b)", lambda a, b: torch.div(a, b)),
        ("a.div(b)", lambda a, b: a.div(b)),
        ("torch.div(a, other=b)", lambda a, b: torch.div(a, other=b)),
        ("torch.true_divide(a, b)", lambda a, b: torch.true_divide(a, b)),
        ("a // b", lambda a, b: a // b),
        ("2 / b", lambda a, b: 2 / b),
    ],
)
def test_operand_of_picks_the_divisor(form: str, call: Any) -> None:
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    with _Recorder() as recorder:
        call(a, b)
    ((name, args, kwargs),) = recorder.calls
    assert name in op_names("div"), (form, name)
    assert operand_of("div", name, args, kwargs) is b, form
    if form == "2 / b":
        assert name == "__rdiv__"  # the receiver is the divisor


def test_operand_of_reads_keywords_and_missing_arguments() -> None:
    x = torch.tensor([1.0])
    assert operand_of("log", "log", (), {"input": x}) is x
    assert operand_of("div", "div", (x,), {}) is None
    assert operand_of("div", "__rdiv__", (), {}) is None


def test_kl_div_suspect_operand_is_the_target() -> None:
    log_probs = torch.log_softmax(torch.tensor([[0.0, 1.0]]), -1)
    target = torch.tensor([[0.5, 0.5]])
    with _Recorder() as recorder:
        torch.nn.functional.kl_div(log_probs, target, reduction="batchmean")
    ((name, args, kwargs),) = [c for c in recorder.calls if c[0] == "kl_div"]
    operand = operand_of("kl_div", name, args, kwargs)
    assert operand is target
    assert float(suspect_loss("kl_div", operand)) > 0  # a safe call is not at the boundary


# ---------------------------------------------------------------- the probe


def _probe(marker: str, op: str, lines: frozenset[int] | None = None) -> OpProbe:
    return OpProbe(str(FIXTURES / PROBED), lines or frozenset({marker_line(PROBED, marker)}), op)


@pytest.mark.parametrize(
    ("marker", "name"),
    [
        ("@torch-div", "div"),
        ("@method-div", "div"),
        ("@operator-div", "div"),
        ("@keyword-div", "div"),
        ("@rdiv", "__rdiv__"),
    ],
)
def test_probe_records_one_form_on_its_line_only(marker: str, name: str) -> None:
    """div_forms divides six times on six lines (two of them the same text): only the
    watched line's call is recorded, with the divisor as the operand."""
    from dynfix.probe_target import div_forms

    a, b = torch.tensor([1.0, 2.0]), torch.tensor([4.0, 8.0])
    with _probe(marker, "div") as probe:
        outputs = div_forms(a, b)
    assert [(hit.func_name, hit.operand is b) for hit in probe.hits] == [(name, True)]
    expected = 2 / b if name == "__rdiv__" else a / b
    assert torch.equal(probe.hits[0].output, expected)
    assert len(outputs) == 6


def test_probe_ignores_other_ops_on_the_watched_line() -> None:
    from dynfix.probe_target import mixed_line

    a, b = torch.tensor([1.0, 2.0]), torch.tensor([4.0, 8.0])
    with _probe("@mixed", "div") as divs:
        mixed_line(a, b)
    with _probe("@mixed", "log") as logs:
        mixed_line(a, b)
    with _probe("@mixed", "sqrt") as sqrts:
        mixed_line(a, b)
    assert [(h.func_name, h.operand is b) for h in divs.hits] == [("div", True)]
    assert [(h.func_name, h.operand is a) for h in logs.hits] == [("log", True)]
    assert sqrts.hits == []


def test_probe_attributes_a_helper_in_another_file_to_the_calling_line() -> None:
    """take_log lives in probe_helper.py; the nearest frame in the watched file is the call
    site, so the log counts for that line and not for the direct log below it."""
    from dynfix.probe_target import through_helper

    x = torch.tensor([1.0, 2.0])
    with _probe("@helper-call", "log") as via_helper:
        through_helper(x)
    with _probe("@direct-log", "log") as direct:
        through_helper(x)
    assert [(h.func_name, h.operand is x) for h in via_helper.hits] == [("log", True)]
    assert len(direct.hits) == 1 and torch.equal(direct.hits[0].operand, x + 1)
    helper = OpProbe(
        str(FIXTURES / "dynfix/probe_helper.py"),
        frozenset({marker_line("dynfix/probe_helper.py", "@helper-log")}),
        "log",
    )
    with helper:
        through_helper(x)
    assert len(helper.hits) == 1  # watched from the helper's own file, it is the helper's


def test_probe_sees_a_call_spanning_several_lines_and_resets() -> None:
    from dynfix.probe_target import multiline

    lines = frozenset(
        range(marker_line(PROBED, "@multiline-start"), marker_line(PROBED, "@multiline-end") + 1)
    )
    probe = _probe("", "log", lines)
    with probe:
        multiline(torch.tensor([1.0]))
    assert [h.func_name for h in probe.hits] == ["log"]
    probe.reset()
    assert probe.hits == []


def test_probe_outside_its_context_records_nothing() -> None:
    from dynfix.probe_target import div_forms

    probe = _probe("@torch-div", "div")
    div_forms(torch.tensor([1.0]), torch.tensor([2.0]))
    assert probe.hits == []


# ---------------------------------------------------------------- entries


def test_synthesise_plain_function_with_tensor_annotations() -> None:
    entry = synthesise(FIXTURES, ENTRIES, "plain", 0)
    assert entry.target == "dynfix.entry_cases:plain" and entry.source == "synthesised"
    assert entry.specs == [default_spec(), default_spec()]
    assert entry.constants == {} and not entry.is_method
    out = entry.call([torch.ones(4, 8), torch.zeros(4, 8)])
    assert out.shape == (4, 8)


def test_synthesise_reads_jaxtyping_shapes() -> None:
    entry = synthesise(FIXTURES, ENTRIES, "jaxtyped", 0)
    assert [s.shape for s in entry.specs] == [(4, 3)]
    assert entry.specs[0].source == "default"


def test_synthesise_keeps_repeated_jaxtyping_names_equal() -> None:
    entry = synthesise(FIXTURES, ENTRIES, "square", 0)
    (shape,) = [s.shape for s in entry.specs]
    assert len(shape) == 2 and shape[0] == shape[1]


def test_synthesise_keeps_non_tensor_defaults_as_constants() -> None:
    entry = synthesise(FIXTURES, ENTRIES, "with_constants", 0)
    assert len(entry.specs) == 1
    assert entry.constants == {"dim": -1, "eps": 0.5, "scale": 2.0}
    out = entry.call([torch.ones(4, 8)])
    assert torch.allclose(out, torch.log(torch.tensor(8.5)) * 2.0)


@pytest.mark.parametrize(
    ("function", "message"),
    [
        # an int, bool, float, Optional or Literal parameter gets a value (constant_for);
        # a str has none to give
        ("needs_label", r"parameter 'label' \(str\) has no default and is not a tensor"),
        ("nothing_to_search", r"no tensor parameters"),
        ("outer.<locals>.inner", r"not reachable from the module"),
        ("no_such_function", r"dynfix.entry_cases has no no_such_function"),
    ],
)
def test_synthesise_refuses_what_it_cannot_call(function: str, message: str) -> None:
    with pytest.raises(EntryError, match=message) as info:
        synthesise(FIXTURES, ENTRIES, function, 0)
    assert "configure an entry" in str(info.value)


def test_synthesise_calls_a_method_of_a_plain_class_on_a_fresh_object() -> None:
    """A class that is no nn.Module (tests/test_object_entries.py has the searched
    constructors): built without arguments on each call, its method takes the input."""
    entry = synthesise(FIXTURES, ENTRIES, "NotAModule.run", 0)
    assert isinstance(entry.fn, ObjectCall) and entry.fn.init_names == ()
    assert entry.specs == [default_spec((4, 8))] and not entry.is_method
    assert torch.equal(entry.call([torch.ones(4, 8)]), torch.zeros(4, 8))


def test_synthesise_reports_an_import_failure() -> None:
    with pytest.raises(
        EntryError,
        match=r"importing dynfix.no_such_module failed: "
        r"ModuleNotFoundError",
    ):
        synthesise(FIXTURES, "dynfix/no_such_module.py", "f", 0)


def test_synthesise_module_method_from_its_first_layer() -> None:
    """Small() builds with no arguments and starts with nn.Linear(16, 4): input (4, 16)."""
    entry = synthesise(FIXTURES, ENTRIES, "Small.forward", 0)
    assert entry.is_method and entry.target == "dynfix.entry_cases:Small.forward"
    assert entry.specs == [default_spec((4, 16))]
    assert entry.call([torch.zeros(4, 16)]).shape == (4, 4)
    again = synthesise(FIXTURES, ENTRIES, "Small.forward", 0)
    model: Any = getattr(entry.fn, "__self__", None)
    model_again: Any = getattr(again.fn, "__self__", None)
    assert torch.equal(model.proj.weight, model_again.proj.weight), (
        "weights must follow the seed, or the reproducer builds a different model"
    )


def test_synthesise_module_needing_constructor_arguments_asks_for_init() -> None:
    # a size it makes up (signatures.constructor_args); another module it cannot
    entry = synthesise(FIXTURES, ENTRIES, "NeedsArgs.forward", 0)
    assert entry.init == {"width": 8} and entry.specs[0].shape[-1] == 8
    with pytest.raises(EntryError, match=r"NeedsEncoder\(\) needs constructor arguments.*`init`"):
        synthesise(FIXTURES, ENTRIES, "NeedsEncoder.forward", 0)


def test_build_configured_constructs_a_module_with_init() -> None:
    config = EntryConfig(
        "dynfix.entry_cases:NeedsArgs", ("float32[2,5] in [-1, 1]",), init={"width": 5}
    )
    entry = build_configured(FIXTURES, config, seed=0)
    assert entry.source == "config" and entry.init == {"width": 5}
    assert isinstance(entry.fn, torch.nn.Module)
    model: Any = entry.fn
    assert model.proj.in_features == 5
    assert entry.specs == [InputSpec("float32", (2, 5), -1.0, 1.0, "config")]
    assert entry.call([torch.zeros(2, 5)]).shape == (2, 5)


def test_build_configured_function_with_a_bool_mask() -> None:
    config = EntryConfig("dynfix.search_cases:masked_softmax", ("float32[4,8]", "bool[4,8]"))
    entry = build_configured(FIXTURES, config, seed=0)
    assert [s.dtype for s in entry.specs] == ["float32", "bool"]
    mask = torch.ones(4, 8, dtype=torch.bool)
    assert entry.call([torch.zeros(4, 8), mask]).shape == (4, 8)


@pytest.mark.parametrize(
    ("target", "inputs", "message"),
    [
        ("dynfix.entry_cases", ("float32[2]",), r"must be 'package.module:name'"),
        ("dynfix.entry_cases:NoSuch", ("float32[2]",), r"cannot import entry .*NoSuch"),
        ("dynfix.not_there:f", ("float32[2]",), r"cannot import entry dynfix.not_there:f"),
        ("dynfix.entry_cases:plain", ("float32[2] in [3, 1]",), r"empty box"),
    ],
)
def test_build_configured_refuses_bad_targets(
    target: str, inputs: tuple[str, ...], message: str
) -> None:
    with pytest.raises(EntryError, match=message):
        build_configured(FIXTURES, EntryConfig(target, inputs), seed=0)


# ---------------------------------------------------------------- search


def test_restarts_find_log_of_an_underflowed_softmax() -> None:
    """Logits 104 apart in [-100, 100] make a softmax entry exactly 0: random draws hit it."""
    _, _, outcome = search("log_of_softmax", "@log-softmax", "log")
    assert (outcome.triggered, outcome.stage, outcome.where) == (True, "restarts", "forward")
    assert outcome.reached and outcome.reaches_output
    probs = torch.softmax(outcome.inputs[0], dim=-1)
    assert bool((probs == 0).any())
    assert outcome.inputs[0].min() >= -100 and outcome.inputs[0].max() <= 100


def test_division_by_std_needs_gradient_or_snap() -> None:
    """A constant batch (std exactly 0) has measure zero: restarts never find it."""
    _, _, outcome = search("standardise", "@std-div", "div")
    assert outcome.triggered and outcome.where == "forward"
    assert outcome.stage in ("gradient", "snap")
    (x,) = outcome.inputs
    assert float(x.std()) == 0.0
    assert outcome.best_loss <= 0


def test_norm_of_a_zero_row_is_a_backward_failure() -> None:
    """sqrt(0) is fine forward; its derivative is inf, so the gradient is NaN."""
    _, _, outcome = search("row_norm", "@norm-sqrt", "sqrt")
    assert outcome.triggered and outcome.where == "backward"
    assert outcome.stage in ("gradient", "snap")
    (x,) = outcome.inputs
    assert bool(((x**2).sum(-1) == 0).any())


def test_fully_masked_softmax_row_is_found_without_gradients() -> None:
    """The mask is bool: no gradient reaches it, so restarts or evolution must find a row
    with every entry masked out."""
    entry = build_configured(
        FIXTURES,
        EntryConfig("dynfix.search_cases:masked_softmax", ("float32[4,8]", "bool[4,8]")),
        seed=0,
    )
    outcome = searcher(entry, SEARCH, "@masked-softmax", "softmax").run()
    assert outcome.triggered and outcome.where == "forward"
    assert outcome.stage in ("restarts", "evolution")
    _, mask = outcome.inputs
    assert mask.dtype == torch.bool and bool((~mask).all(-1).any())


def test_out_of_reach_is_not_triggered_but_reached() -> None:
    """exp overflows float32 only above 88.7; inside [-10, 10] it cannot, and the best the
    search can do is the box's edge."""
    entry = build_configured(
        FIXTURES,
        EntryConfig("dynfix.search_cases:exp_only", ("float32[4,8] in [-10, 10]",)),
        seed=0,
    )
    outcome = searcher(
        entry, SEARCH, "@exp", "exp", budget=Budget(seconds=600, evaluations=300)
    ).run()
    assert not outcome.triggered and outcome.reached
    assert outcome.error is None and outcome.evaluations == 300
    assert outcome.best_loss == pytest.approx(88.72283905206835 - 10, abs=1e-3)


def test_unreached_op_is_reported_as_unreached() -> None:
    _, _, outcome = search(
        "never_reached", "@never", "log", budget=Budget(seconds=600, evaluations=200)
    )
    assert (outcome.triggered, outcome.reached, outcome.error) == (False, False, None)
    assert outcome.best_loss == math.inf


def test_code_raising_on_every_input_records_the_error() -> None:
    _, _, outcome = search(
        "always_raises", "@raises", "log", budget=Budget(seconds=600, evaluations=200)
    )
    assert not outcome.triggered and not outcome.reached
    assert outcome.error == "ValueError: refuses every input"


def test_a_structural_error_on_every_draw_ends_the_search_early() -> None:
    """`len()` of a scalar fails whatever the values: the search stops after
    SAME_ERROR_LIMIT draws instead of spending its budget. A value check with fixed words
    (`always_raises`: "refuses every input") is not structural: later stages' zeros and
    corners might pass it, so it gets the whole budget."""
    from analyzers.dynamic.search import SAME_ERROR_LIMIT, structural

    _, _, outcome = search(
        "wrong_structure", "@structure", "log", budget=Budget(seconds=600, evaluations=400)
    )
    assert not outcome.reached and outcome.error is not None
    assert outcome.error.startswith("TypeError") and outcome.evaluations == SAME_ERROR_LIMIT
    _, _, checked = search(
        "always_raises", "@raises", "log", budget=Budget(seconds=600, evaluations=400)
    )
    assert checked.error == "ValueError: refuses every input" and checked.evaluations == 400
    assert structural("RuntimeError: The size of tensor a (4) must match the size of b (8)")
    assert not structural("ValueError: x must be all zeros")


def test_search_is_deterministic_under_a_seed() -> None:
    """Same seed, same trigger: a re-run must show the reader the same values."""
    first = search("standardise", "@std-div", "div", seed=7)[2]
    second = search("standardise", "@std-div", "div", seed=7)[2]
    assert (first.stage, first.where, first.evaluations) == (
        second.stage,
        second.where,
        second.evaluations,
    )
    assert all(torch.equal(a, b) for a, b in zip(first.inputs, second.inputs, strict=True))
    assert first.trace == second.trace


def test_minimise_shrinks_a_wide_trigger_to_the_values_that_matter() -> None:
    """log(50 - max(x)) fails when one element reaches 50; ddmin keeps just that one."""
    entry, found, outcome = search("log_headroom", "@headroom", "log")
    assert outcome.triggered and outcome.inputs[0].shape == (64,)
    assert int((outcome.inputs[0] != 0).sum()) > 16

    def still_fails(trial: list[torch.Tensor]) -> bool:
        return found.evaluate(trial).forward

    (small,) = minimise(outcome.inputs, entry.specs, still_fails)
    kept = small[small != base_value(entry.specs[0])]
    assert 1 <= kept.numel() <= 3 and float(kept.max()) >= 50
    assert small.shape == (64,) and small.dtype == torch.float32
    assert still_fails([small])


def test_minimise_puts_the_constants_back_first_even_when_time_allows_one_trial() -> None:
    """Inputs that stand for a parameter's attributes (InputSpec.attribute) go back to 0
    together in the first trial: a trigger that needs none of them must not keep them set
    because a slow entry stopped the minimiser early (analyzers/trust.rests_on_constants)."""
    data = InputSpec("float32", (4,), -100.0, 100.0, "default")
    specs = [data, *(replace(data, attribute=f"params.c{i}") for i in range(8))]
    inputs = [torch.tensor([0.0, 60.0, 1.0, 2.0]), *(torch.full((4,), 3.0) for _ in range(8))]
    trials: list[list[torch.Tensor]] = []

    def still_fails(trial: list[torch.Tensor]) -> bool:  # the data alone makes it fail
        trials.append(trial)
        return float(trial[0].max()) >= 50

    small = minimise(inputs, specs, still_fails, seconds=0.0)  # time for the first trial only
    assert len(trials) == 1 and all(float(c.abs().sum()) == 0 for c in small[1:])
    assert torch.equal(small[0], inputs[0])  # the data, not yet minimised, is the search's
    small = minimise(inputs, specs, still_fails)
    assert all(float(c.abs().sum()) == 0 for c in small[1:])
    assert int((small[0] != 0).sum()) == 1


# ---------------------------------------------------------------- reproducers


@pytest.fixture
def fixture_copy(tmp_path: Path) -> Path:
    """The fixture packages copied, so reproducers can be saved at their root."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _reproducer(function: str, marker: str, op: str, fixed: str) -> tuple[str, str]:
    """(buggy script, fixed twin's script) for the same minimised trigger."""
    entry, found, outcome = search(function, marker, op)
    assert outcome.triggered
    where = outcome.where or "forward"

    def still_fails(trial: list[torch.Tensor]) -> bool:
        evaluation = found.evaluate(trial)
        return (
            evaluation.forward if where == "forward" else evaluation.backward or evaluation.forward
        )

    small = minimise(outcome.inputs, entry.specs, still_fails)
    target = Target(SEARCH, marker_line(SEARCH, marker), op, f"{op}(...)", where)
    twin = synthesise(FIXTURES, SEARCH, fixed, 0)
    return render(entry, small, target, 0), render(twin, small, target, 0)


def _run_script(root: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    (root / name).write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, name], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("function", "marker", "op", "fixed", "where"),
    [
        ("log_of_softmax", "@log-softmax", "log", "log_of_softmax_fixed", "forward"),
        ("row_norm", "@norm-sqrt", "sqrt", "row_norm_fixed", "backward"),
    ],
)
def test_reproducer_fails_on_the_bug_and_passes_on_the_fix(
    fixture_copy: Path, function: str, marker: str, op: str, fixed: str, where: str
) -> None:
    buggy_source, fixed_source = _reproducer(function, marker, op, fixed)
    tree = ast.parse(buggy_source)
    imports = [
        (n.module, [a.name for a in n.names])
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom)
    ]
    assert ("dynfix.search_cases", [function]) in imports
    assert f"in the {where} pass" in buggy_source
    assert ("total.backward()" in buggy_source) == (where == "backward")

    buggy = _run_script(fixture_copy, "repro_bug.py", buggy_source)
    assert buggy.returncode != 0 and "AssertionError" in buggy.stderr, buggy.stderr[-2000:]
    fixed_run = _run_script(fixture_copy, "repro_fixed.py", fixed_source)
    assert fixed_run.returncode == 0, fixed_run.stderr[-2000:]


def test_reproducer_rebuilds_a_module_with_the_searched_weights(fixture_copy: Path) -> None:
    """A method entry's script constructs the model under the same seed; run in process."""
    entry = synthesise(FIXTURES, ENTRIES, "Small.forward", 0)
    found = searcher(entry, ENTRIES, "@small-forward", "log")
    outcome = found.run()
    assert outcome.triggered and outcome.where == "forward"
    small = minimise(outcome.inputs, entry.specs, lambda t: found.evaluate(t).forward)
    target = Target(
        ENTRIES, marker_line(ENTRIES, "@small-forward"), "log", "torch.log(...)", "forward"
    )
    source = render(entry, small, target, 0)
    assert "from dynfix.entry_cases import Small" in source
    assert "model = Small()" in source and "model.forward(" in source
    script = fixture_copy / "repro_module.py"
    script.write_text(source, encoding="utf-8")
    with pytest.raises(AssertionError, match="makes the output NaN/Inf"):
        runpy.run_path(str(script), run_name="__main__")


# ---------------------------------------------------------------- localisation


def test_localise_names_the_first_op_that_made_the_nan() -> None:
    """x = 0: the division makes 0/0 = NaN one line before the log the search watched."""
    from analyzers.dynamic.localise import localise

    entry = build_configured(
        FIXTURES, EntryConfig("dynfix.localise_cases:log_of_normalised", ("float32[4]",)), seed=0
    )
    found = localise(entry, [torch.zeros(4)], str(FIXTURES))
    assert found is not None
    assert found["path"] == "dynfix/localise_cases.py"
    assert found["line"] == marker_line("dynfix/localise_cases.py", "@first-nan")
    assert found["op"] in ("div", "__truediv__")


def test_localise_is_silent_when_the_forward_stays_finite() -> None:
    from analyzers.dynamic.localise import localise

    entry = build_configured(
        FIXTURES, EntryConfig("dynfix.localise_cases:gradient_only", ("float32[4]",)), seed=0
    )
    assert localise(entry, [torch.zeros(4)], str(FIXTURES)) is None


def test_autocast_entry_runs_under_autocast_and_its_reproducer_says_so(tmp_path: Path) -> None:
    from analyzers.dynamic.reproducer import Target, render

    entry = build_configured(
        FIXTURES,
        EntryConfig(
            "dynfix.localise_cases:attention_weights",
            ("float32[2,4] in [-6, 6]", "float32[2,4] in [-6, 6]"),
            autocast="bfloat16",
        ),
        seed=0,
    )
    assert entry.autocast == "bfloat16" and entry.dtype == "bfloat16"
    out = entry.call([torch.ones(2, 4), torch.ones(2, 4)])
    assert out.dtype == torch.bfloat16  # the matmul ran in bfloat16
    outcome = searcher(entry, "dynfix/localise_cases.py", "@autocast-exp", "exp").run()
    assert outcome.triggered and outcome.where == "forward"
    source = render(
        entry,
        outcome.inputs,
        Target("dynfix/localise_cases.py", 1, "exp", "torch.exp(...)", "forward"),
        seed=0,
    )
    assert 'with torch.autocast("cpu", dtype=torch.bfloat16):' in source
    script = tmp_path / "repro.py"
    script.write_text(source, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=FIXTURES,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(FIXTURES)},
        timeout=120,
    )
    assert proc.returncode != 0 and "AssertionError" in proc.stderr
