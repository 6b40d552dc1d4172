"""Ops that fail on Python numbers by raising (analyzers/dynamic/raised.py).

A metric's `matched / total` of two ints raises ZeroDivisionError where a tensor would hold
inf; the static pass flags it as an `unknown-operand` candidate when `total` is a counter a
loop may leave at 0 (an empty corpus), and the dynamic pass proves it with an empty batch,
taking the op's own Python error, raised by the flagged line, for the failure. The
reproducer the host writes fails on its own, and passes once the line is guarded.
"""

from __future__ import annotations

import builtins
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from harness_support import run_findings, run_script, write_repo

from analyzers.catalogue import KNOWN_OPS, PYTHON_ERRORS, python_errors
from analyzers.dynamic.emptied import MAX_ITEMS, emptied_entries, plain_data
from analyzers.dynamic.harvest import Recorded
from analyzers.dynamic.probe import LineWatch
from analyzers.dynamic.raised import op_raised, raised_by_op
from analyzers.dynamic.writer import Target, write
from analyzers.model import Finding
from analyzers.report.summary import proof_sentence

# One failing Python expression per kind the catalogue names, checked against this
# interpreter: the catalogue's table is a fact about Python, not a guess.
FAILING = {
    "div": [lambda: 1 / 0, lambda: 1.0 / 0.0],
    "reciprocal": [lambda: 1.0 / 0.0],
    "fmod": [lambda: math.fmod(1.0, 0.0), lambda: 1 % 0],
    "exp": [lambda: math.exp(1000.0)],
    "expm1": [lambda: math.expm1(1000.0)],
    "cosh": [lambda: math.cosh(1000.0)],
    "sinh": [lambda: math.sinh(1000.0)],
    "pow": [lambda: math.pow(-8.0, 0.5), lambda: 0.0**-1, lambda: 10.0**400],
    "log": [lambda: math.log(0.0)],
    "sqrt": [lambda: math.sqrt(-1.0)],
    "acos": [lambda: math.acos(2.0)],
}


@pytest.mark.parametrize("op", sorted(FAILING))
def test_the_catalogue_names_what_python_raises(op: str) -> None:
    assert op in KNOWN_OPS
    kinds = tuple(getattr(builtins, name) for name in python_errors(op))
    raised = []
    for failing in FAILING[op]:
        with pytest.raises(kinds) as caught:
            failing()
        raised.append(type(caught.value).__name__)
    # every kind listed is one Python really raises for the op (none listed in vain)
    assert set(python_errors(op)) == set(raised)
    assert set(PYTHON_ERRORS) <= set(FAILING)


def _raise_from(tmp_path: Path, source: str, call: str) -> tuple[BaseException, str]:
    path = tmp_path / "metric_mod.py"
    path.write_text(source, encoding="utf-8")
    namespace: dict[str, Any] = {}
    exec(compile(source, str(path), "exec"), namespace)
    try:
        eval(call, namespace)
    except Exception as exc:
        return exc, str(path)
    raise AssertionError(f"{call} did not raise")


SOURCE = (
    "import math\n"
    "def helper(n):\n"
    "    return 1 / n\n"
    "def ratio(a, n):\n"
    "    return a / n\n"  # line 5
    "def through(n):\n"
    "    return helper(n) + 1\n"  # line 7: the division is the helper's
    "def checked(p):\n"
    "    raise ValueError('p must be positive') if p <= 0 else math.log(p)\n"  # line 9
    "def domain(p):\n"
    "    return math.log(p)\n"  # line 11
)


def test_only_the_flagged_lines_own_error_counts(tmp_path: Path) -> None:
    exc, path = _raise_from(tmp_path, SOURCE, "ratio(1, 0)")
    assert raised_by_op(exc, LineWatch(path, frozenset({5})), "div")
    assert not raised_by_op(exc, LineWatch(path, frozenset({3})), "div")  # another line
    assert not raised_by_op(exc, LineWatch(path, frozenset({5})), "log")  # another op's kind
    found = op_raised(exc, LineWatch(path, frozenset({5})), "div")
    assert found is not None and found.forward and found.visible == "exception"

    exc, path = _raise_from(tmp_path, SOURCE, "through(0)")
    assert not raised_by_op(exc, LineWatch(path, frozenset({7})), "div")  # raised in helper
    assert op_raised(exc, LineWatch(path, frozenset({7})), "div") is None

    exc, path = _raise_from(tmp_path, SOURCE, "checked(0)")  # the code's own ValueError
    assert not raised_by_op(exc, LineWatch(path, frozenset({9})), "log")
    exc, path = _raise_from(tmp_path, SOURCE, "domain(0)")  # math's domain error
    assert raised_by_op(exc, LineWatch(path, frozenset({11})), "log")


# allennlp's PearsonCorrelation of 2019, in small: the moments of pairs seen so far, and r from
# them. A fresh metric (or constant data) has variances of 0, so r is 0.0 / 0.0 in Python
# floats. Building the entry calls get_metric once on the object as its constructor makes it,
# and that call raises at the flagged line: the finding, not a call that cannot be made.
RUNNING_CORRELATION = '''import math

import torch


class RunningMoment:
    """The running co-moment of the pairs seen so far."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0

    def update(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.count += x.numel()
        self.total += float((x * y).sum())

    def get_metric(self) -> float:
        return self.total / max(self.count, 1)


class RunningCorrelation:
    """Pearson's r of the pairs seen so far, from running moments."""

    def __init__(self) -> None:
        self.xy = RunningMoment()
        self.xx = RunningMoment()
        self.yy = RunningMoment()

    def update(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.xy.update(x, y)
        self.xx.update(x, x)
        self.yy.update(y, y)

    def get_metric(self) -> float:
        covariance = self.xy.get_metric()
        x_variance = self.xx.get_metric()
        y_variance = self.yy.get_metric()
        return covariance / (math.sqrt(x_variance) * math.sqrt(y_variance))
'''


def test_a_fresh_objects_member_raising_at_its_line_is_proven(tmp_path: Path) -> None:
    repo = write_repo(tmp_path, {"corr.py": RUNNING_CORRELATION})
    run = run_findings(
        repo,
        "corr.py",
        ["RunningCorrelation.get_metric"],
        finding_timeout=60,
        timeout=240,
        search_seconds=2.0,
        harvest=False,
        fix=False,
    )
    record = run.record("RunningCorrelation.get_metric")
    assert record["status"] == "confirmed", record
    assert "obj = RunningCorrelation()" in record["reproducer"]
    check = run_script(repo, record["reproducer"])
    assert check.returncode != 0 and "raises ZeroDivisionError" in check.stderr, check.stderr


BLEU = '''"""A corpus metric in the style of a BLEU brevity penalty: lengths counted over a loop."""

import torch


def length_ratio(references: torch.Tensor, hypotheses: torch.Tensor) -> float:
    reference_length = 0
    hypothesis_length = 0
    for reference, hypothesis in zip(references, hypotheses):
        reference_length += len(reference)
        hypothesis_length += len(hypothesis)
    return hypothesis_length / reference_length
'''
GUARDED = BLEU.replace(
    "    return hypothesis_length / reference_length\n",
    "    return hypothesis_length / reference_length if reference_length else 1.0\n",
)


def test_an_empty_batch_proves_a_counter_division(tmp_path: Path) -> None:
    repo = write_repo(tmp_path, {"metrics/__init__.py": "", "metrics/bleu.py": BLEU})
    run = run_findings(
        repo,
        "metrics/bleu.py",
        ["length_ratio"],
        finding_timeout=120,
        timeout=300,
        harvest=False,
    )
    record = run.record("length_ratio")
    assert record["status"] == "confirmed", record
    trigger = record["trigger"]
    assert trigger["shows"] == "exception" and trigger["where"] == "forward"
    assert [box["shape"] for box in record["box"]["inputs"]] == [[0, 8], [0, 8]]

    finding = _finding("confirmed", {**trigger, "box": record["box"]})
    sentence = proof_sentence(finding)
    assert sentence.startswith("ZeroDivisionError raised by the line itself"), sentence
    assert "float32[0, 8] in" in sentence and "(empty)" in sentence

    source = record["reproducer"]
    assert "raises ZeroDivisionError" in source.splitlines()[0]
    assert "torch.zeros((0, 8)" in source  # the empty batch keeps its shape
    failing = run_script(repo, source)
    assert failing.returncode != 0 and "AssertionError" in failing.stderr, failing.stderr[-2000:]
    assert "metrics/bleu.py:12 raises ZeroDivisionError" in failing.stderr

    (repo / "metrics" / "bleu.py").write_text(GUARDED, encoding="utf-8")
    passing = run_script(repo, source)
    assert passing.returncode == 0, passing.stderr[-2000:]


def _finding(status: str, trigger: dict[str, Any]) -> Finding:
    return Finding(
        path="metrics/bleu.py",
        line=12,
        column=12,
        end_line=12,
        end_column=50,
        function="length_ratio",
        op="div",
        framework="torch",
        call="hypothesis_length / reference_length",
        operand="reference_length",
        why="w",
        rule="unknown-operand",
        severity="note",
        status=status,  # type: ignore[arg-type]
        trigger=trigger,
    )


def test_a_forged_shows_value_gets_the_nan_sentence() -> None:
    trigger = {
        "where": "forward",
        "evaluations": 3,
        "seconds": 0.1,
        "stage": "restarts",
        "box": {"inputs": [{"dtype": "float32", "shape": "0, 8", "lo": -1.0, "hi": 1.0}]},
    }
    plain = proof_sentence(_finding("confirmed", {**trigger, "shows": "nope"}))
    assert plain.startswith("NaN/Inf in the forward pass") and "(empty)" not in plain
    raised = proof_sentence(_finding("confirmed", {**trigger, "shows": "exception"}))
    assert raised.startswith("ZeroDivisionError raised by the line itself")


def test_the_reproducer_of_an_exception_checks_the_line_and_imports_what_it_needs() -> None:
    plan = {
        "kind": "entry",
        "module": "pkg.m",
        "qualname": "f",
        "framework": "numpy",
        "seed": 0,
        "inputs": [
            {
                "name": "x",
                "tensor": {"dtype": "float32", "shape": [0, 8], "float": True, "inline": True},
            }
        ],
    }
    text = write(plan, Target("pkg/m.py", 4, "log", "math.log(s)", "forward", "exception"))
    compile(text, "repro.py", "exec")  # a script that parses
    assert "x = np.zeros((0, 8), dtype=np.float32)" in text
    assert "except (ValueError,) as exc:" in text and "_raised_here(exc, 'pkg/m.py', 4)" in text
    assert "import traceback" in text and "raises ValueError" in text.splitlines()[0]


BREVITY = '''"""Corpus BLEU's brevity penalty over token lists."""

import math

import torch  # noqa: F401  (the package computes with torch elsewhere)


def brevity(reference_corpus, translation_corpus):
    reference_length = 0
    translation_length = 0
    for references, translations in zip(reference_corpus, translation_corpus):
        reference_length += len(references)
        translation_length += len(translations)
    ratio = translation_length / reference_length
    return math.exp(1 - 1.0 / ratio) if ratio < 1.0 else 1.0
'''
BREVITY_TEST = """from metrics.bleu import brevity


def test_short_translation_is_penalised():
    assert brevity([["a", "b", "c"]], [["a", "b"]]) < 1.0
"""


def test_plain_data_and_the_ways_to_empty_a_recorded_call() -> None:
    assert plain_data([["a", 1], (2.5, None, True)]) and not plain_data([torch.ones(2)])
    assert not plain_data([list(range(MAX_ITEMS + 1))])

    def metric(refs: Any, hyps: Any, order: int = 4) -> float:
        return 0.0

    call = Recorded(args=([["a", "b"]], [["a"], ["b"]], 2), kwargs={"smooth": True})
    made = [(e.emptied, e.how, e.template) for e in emptied_entries("m:metric", call, metric)]
    assert made == [
        ("refs", "whole", [[], [["a"], ["b"]], 2]),
        ("refs", "elements", [[[]], [["a"], ["b"]], 2]),
        ("hyps", "whole", [[["a", "b"]], [], 2]),
        ("hyps", "elements", [[["a", "b"]], [[], []], 2]),
    ]
    assert all(
        e.template_kwargs == {"smooth": True} and e.specs == []
        for e in emptied_entries("m:metric", call, metric)
    )
    # run, and its reproducer written, as code of the finding's framework
    assert {e.framework for e in emptied_entries("m:metric", call, metric, "tensorflow")} == {
        "tensorflow"
    }
    # a tensor among the arguments: the search's own recorded entry takes that call
    assert emptied_entries("m:metric", Recorded((torch.ones(2), [[1]]), {}), metric) == []


def test_the_tests_call_with_one_sequence_emptied_proves_both_divisions(tmp_path: Path) -> None:
    repo = write_repo(
        tmp_path,
        {"metrics/__init__.py": "", "metrics/bleu.py": BREVITY, "tests/test_bleu.py": BREVITY_TEST},
    )
    run = run_findings(
        repo, "metrics/bleu.py", ["brevity", "brevity"], finding_timeout=120, timeout=300
    )
    by_line = {
        r["box"]["emptied"]["parameter"]: r for r in run.result.records if r.get("stage") is None
    }
    # line 14 fails on an empty corpus; line 15 only when the translations are empty and the
    # references are not, which is the tests' own call with each translation emptied
    assert {
        name: (
            r["status"],
            r["trigger"]["shows"],
            r["trigger"]["stage"],
            r["box"]["emptied"]["how"],
        )
        for name, r in by_line.items()
    } == {
        "reference_corpus": ("confirmed", "exception", "emptied", "whole"),
        "translation_corpus": ("confirmed", "exception", "emptied", "elements"),
    }
    record = by_line["translation_corpus"]
    sentence = proof_sentence(_finding("confirmed", {**record["trigger"], "box": record["box"]}))
    assert "the tests' own call, with every element of `translation_corpus` empty" in sentence

    source = record["reproducer"]
    assert "out = brevity([['a', 'b', 'c']], [[]])" in source
    failing = run_script(repo, source)
    assert "metrics/bleu.py:15 raises ZeroDivisionError" in failing.stderr, failing.stderr[-2000:]
    guarded = BREVITY.replace("if ratio < 1.0 else 1.0", "if 0 < ratio < 1.0 else 1.0")
    (repo / "metrics" / "bleu.py").write_text(guarded, encoding="utf-8")
    assert run_script(repo, source).returncode == 0


def test_a_forged_emptied_block_adds_nothing() -> None:
    trigger = {"where": "forward", "evaluations": 1, "seconds": 0.0, "stage": "emptied"}
    for forged in (
        {"parameter": "x; rm -rf /", "how": "whole"},
        {"parameter": "refs", "how": "everything"},
        "refs",
    ):
        box = {"source": "harvested", "target": "m:f", "inputs": [], "emptied": forged}
        sentence = proof_sentence(_finding("confirmed", {**trigger, "box": box}))
        assert "inputs in the box" in sentence and "rm -rf" not in sentence
