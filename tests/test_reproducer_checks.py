"""The reproducer checks what the search found: a trigger is confirmed only where its script
fails, so the search (with `require_visible`) and the minimiser ask for a failure that shows
where the script looks (the entry's output, or the gradient reaching its inputs), and the
script checks the gradient whenever the op's NaN/Inf shows only there.

Also the static-pass gaps closed with them: a `where` whose false branch leaks its gradient,
exp(log_softmax) as probabilities, and a softmax over scores filled with -inf by `where`.
"""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from analyzers.dynamic.entries import EntryConfig, build_configured
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.reproducer import Target, render
from analyzers.dynamic.search import Budget, Searcher
from analyzers.dynamic.writer import _tf_check
from analyzers.static import scan_source
from runners.harness import _check_reproducer, _reproducer_that_loads, minimised_trigger

_names = itertools.count()

SOURCE = """
import torch


def masked_sqrt(gap):
    # forward: sqrt of a negative gap is NaN, hidden by the where; its gradient is not
    return torch.where(gap > 0, torch.sqrt(gap), torch.zeros_like(gap)).sum()  # @masked


def absorbed_log(x):
    # log(0) = -inf, replaced before it reaches anything, and no gradient flows through it
    y = torch.log(x.detach())  # @absorbed
    return x + torch.nan_to_num(y, neginf=0.0)


class TemperatureGate(torch.nn.Module):
    # features from a frozen backbone (no gradient reaches x) scaled by a learned magnitude
    # initialised at 0: the output is finite (sqrt(0) = 0), the gradient reaching the weight
    # is inf * 0 = NaN, and the optimiser's first step poisons the model
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(4))

    def forward(self, x):
        return x.detach() * torch.sqrt(self.weight.abs())  # @gate


def cofire_sqrt(x):
    # x: [channels, positions]; sqrt's derivative is infinite where two channels never fire
    # together, and it reaches x only where a channel fires (the ReLU stops it elsewhere)
    h = torch.relu(x)
    return torch.sqrt(h @ h.T).sum()  # @sq
"""


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    name = f"repro_checks_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(SOURCE, encoding="utf-8")
    yield tmp_path, name
    for module in [m for m in sys.modules if m == name]:
        del sys.modules[module]
    while str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


def _line(marker: str) -> int:
    lines = SOURCE.splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


def _searcher(
    repo: tuple[Path, str],
    function: str,
    inputs: tuple[str, ...],
    marker: str,
    op: str,
    require_visible: bool,
) -> tuple[Entry, Searcher]:
    root, name = repo
    entry = build_configured(root, EntryConfig(f"{name}:{function}", inputs), 0)
    return entry, Searcher(
        entry,
        str(root / f"{name}.py"),
        frozenset({_line(marker)}),
        op,
        seed=0,
        budget=Budget(seconds=5.0),
        require_visible=require_visible,
    )


def test_a_masked_forward_nan_is_confirmed_by_the_gradient_it_leaks(repo: tuple[Path, str]) -> None:
    entry, searcher = _searcher(
        repo, "masked_sqrt", ("float32[6] in [-1, 1]",), "@masked", "sqrt", require_visible=True
    )
    outcome = searcher.run()
    assert outcome.triggered and outcome.where == "forward"
    small, shows = minimised_trigger(entry, searcher, outcome)
    assert shows == "gradient"
    assert bool((small[0] < 0).any())  # the minimised trigger keeps a negative gap
    target = Target(f"{repo[1]}.py", _line("@masked"), "sqrt", "torch.sqrt(gap)", "forward", shows)
    script = render(entry, small, target, 0)
    assert "total.backward()" in script and "the gradient reaching gap" in script
    assert "hides it from its output" in script
    fails, stderr = _check_reproducer(repo[0], script)
    assert fails, stderr
    assert "the gradient reaching gap is NaN/Inf" in stderr


def test_a_nan_reaching_only_the_parameters_gradient_is_confirmed(repo: tuple[Path, str]) -> None:
    entry, searcher = _searcher(
        repo,
        "TemperatureGate",
        ("float32[3, 4] in [-1, 1]",),
        "@gate",
        "sqrt",
        require_visible=True,
    )
    assert entry.parameters() and entry.parameters()[0].shape == (4,)
    outcome = searcher.run()
    assert outcome.triggered and outcome.where == "backward"
    small, shows = minimised_trigger(entry, searcher, outcome)
    assert shows == "parameters"
    target = Target(f"{repo[1]}.py", _line("@gate"), "sqrt", "torch.sqrt(...)", "backward", shows)
    script = render(entry, small, target, 0)
    assert (
        "model.named_parameters()" in script
        and "the gradient reaching its parameters" in script.replace("\n", " ")
    )
    fails, stderr = _check_reproducer(repo[0], script)
    assert fails, stderr
    assert "the gradient reaching parameter weight is NaN/Inf" in stderr


def test_a_failure_the_code_absorbs_is_no_trigger_for_the_harness(repo: tuple[Path, str]) -> None:
    _, local = _searcher(
        repo, "absorbed_log", ("float32[4] in [0, 1]",), "@absorbed", "log", require_visible=False
    )
    assert local.run().triggered  # the op itself does go -inf ...
    _, visible = _searcher(
        repo, "absorbed_log", ("float32[4] in [0, 1]",), "@absorbed", "log", require_visible=True
    )
    outcome = visible.run()
    assert not outcome.triggered  # ... but no script could ever show it
    evaluation = visible.evaluate([torch.zeros(4)])
    assert evaluation.forward and evaluation.visible is None
    assert not visible.accepts(evaluation) and local.accepts(evaluation)


def test_the_minimiser_keeps_what_the_script_sees(repo: tuple[Path, str]) -> None:
    """Zeroing every feature keeps sqrt's local derivative infinite, but the ReLU then stops
    the gradient: the minimiser must stop before that (bench case p01_bilinear_signed_sqrt)."""
    entry, searcher = _searcher(
        repo, "cofire_sqrt", ("float32[3,4] in [-5, 5]",), "@sq", "sqrt", require_visible=True
    )
    outcome = searcher.run()
    assert outcome.triggered
    small, shows = minimised_trigger(entry, searcher, outcome)
    assert shows == "gradient"
    assert searcher.still_fails(small, outcome.where)
    assert bool((small[0] > 0).any())  # not all zeros: that hides the gradient
    target = Target(
        f"{repo[1]}.py",
        _line("@sq"),
        "sqrt",
        "torch.sqrt(h @ h.T)",
        outcome.where or "forward",
        shows,
    )
    fails, stderr = _check_reproducer(repo[0], render(entry, small, target, 0))
    assert fails, stderr


def test_target_checks_the_gradient_where_the_trigger_shows_there() -> None:
    forward = Target("m.py", 1, "log", "torch.log(x)", "forward")
    assert not forward.checks_gradient
    assert Target("m.py", 1, "log", "torch.log(x)", "forward", "gradient").checks_gradient
    assert Target("m.py", 1, "log", "torch.log(x)", "backward").checks_gradient
    lines = _tf_check("model", ["x"], ["x"], "log at m.py:1", gradient=True)
    assert any("tape.gradient(total, x)" in line for line in lines)
    assert not any(
        "gradient(" in line
        for line in _tf_check("model", ["x"], ["x"], "log at m.py:1", gradient=False)
    )


# ---------------------------------------------------------------- static gaps


def _findings(source: str) -> list[tuple[int, str, str]]:
    scan = scan_source(textwrap.dedent(source), "m.py")
    return [(f.line, f.op, f.rule) for f in scan.findings]


def test_where_with_the_unsafe_op_in_its_false_branch_leaks_its_gradient() -> None:
    found = _findings("""
        import torch
        def elu(x):
            return torch.where(x > 0, x, torch.expm1(x))
    """)
    assert (4, "expm1", "where-grad-leak") in found
    assert (
        _findings("""
        import torch
        def elu(x):
            return torch.where(x > 0, x, torch.expm1(torch.clamp(x, max=0.0)))
    """)
        == []
    )


def test_log_of_probabilities_from_exp_log_softmax_is_the_log_softmax_pattern() -> None:
    found = _findings("""
        import torch
        import torch.nn.functional as F
        def entropy(logits):
            log_probs = F.log_softmax(logits, dim=-1)
            probs = log_probs.exp()
            return -(probs * torch.log(probs)).sum(-1)
    """)
    assert (7, "log", "log-softmax") in found
    assert (
        _findings("""
        import torch
        import torch.nn.functional as F
        def entropy(logits):
            log_probs = F.log_softmax(logits, dim=-1)
            probs = log_probs.exp()
            return -(probs * log_probs).sum(-1)
    """)
        == []
    )


def test_softmax_over_scores_filled_with_minus_inf_by_where() -> None:
    found = _findings("""
        import numpy as np
        import tensorflow as tf
        def pool(scores, valid):
            scores = tf.where(valid, scores, tf.fill(tf.shape(scores), -np.inf))
            return tf.nn.softmax(scores, axis=-1)
    """)
    assert (6, "softmax", "masked-softmax-inf") in found
    assert (
        _findings("""
        import tensorflow as tf
        def pool(scores, valid):
            scores = tf.where(valid, scores, tf.fill(tf.shape(scores), scores.dtype.min))
            return tf.nn.softmax(scores, axis=-1)
    """)
        == []
    )


def test_logit_with_eps_is_guarded_where_the_dtype_keeps_the_eps() -> None:
    """`torch.logit(x, eps=1e-5)` (DETR's inverse_sigmoid) clamps first: the fix the fix stage
    proposes must not be flagged again (bench case p00_detr_inverse_sigmoid_logit)."""
    from analyzers.config import Config

    source = (
        "import torch\ndef f(x):\n    return torch.logit(x, eps=1e-5)\n"
        "def g(x):\n    return x.logit(1e-6)\ndef h(x):\n    return torch.logit(x)\n"
    )
    assert [(f.line, f.rule) for f in scan_source(source, "m.py").findings] == [
        (7, "unguarded-domain")
    ]
    half = scan_source(source, "m.py", Config(dtype="float16"))  # 1 - 1e-5 == 1 in float16
    assert [f.line for f in half.findings] == [3, 5, 7]


def test_a_module_the_tests_had_loaded_gets_a_reproducer_that_loads_it(tmp_path: Path) -> None:
    """The search may find the module already imported (the repository's tests loaded it)
    while a fresh `import` of it fails (its package's __init__ uses an API the installed
    framework dropped): the script is written again loading it without that __init__."""
    package = tmp_path / "oldpkg"
    package.mkdir()
    (package / "__init__.py").write_text("import torch\nARRAY = torch.DeviceArray\n")
    (package / "losses.py").write_text(
        "import torch\n\n\ndef log_of(x):\n    return torch.log(x)\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        from analyzers.dynamic.loading import load

        loaded = load(tmp_path, "oldpkg.losses")
        assert loaded.how == "package-stubs"
        entry = build_configured(
            tmp_path, EntryConfig("oldpkg.losses:log_of", ("float32[3] in [0, 1]",)), 0
        )
        assert entry.loading == "import"  # what a recorded call's entry says
        target = Target("oldpkg/losses.py", 5, "log", "torch.log(x)", "forward", "output")
        _, script, fails, stderr, used = _reproducer_that_loads(
            tmp_path, entry, [torch.zeros(3)], target, 0
        )
        assert fails, stderr
        assert used.loading == "package-stubs" and "DeviceArray" in used.loading_why
        assert "without its packages' __init__ files" in script
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("oldpkg")]:
            del sys.modules[name]


def test_a_stubbed_load_that_dies_in_a_fresh_process_is_extracted_instead(tmp_path: Path) -> None:
    """The search loaded the module without its package's __init__ (package-stubs) in a
    process where a sibling it imports was already loaded (gpytorch's compiled `libfft`,
    which the tests' run had imported); a fresh process cannot import that sibling, so the
    script is written again extracting the module, skipping the import that fails."""
    import dataclasses
    import types

    package = tmp_path / "stubbed"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('built at install time')\n")
    (package / "libnative.py").write_text("raise ImportError('a compiled module')\n")
    (package / "losses.py").write_text(
        "import torch\nfrom . import libnative\n\n\ndef log_of(x):\n    return torch.log(x)\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        from analyzers.dynamic.loading import _stub_parents

        _stub_parents(tmp_path, "stubbed.losses")
        sys.modules["stubbed.libnative"] = types.ModuleType("stubbed.libnative")
        entry = build_configured(
            tmp_path, EntryConfig("stubbed.losses:log_of", ("float32[3] in [0, 1]",)), 0
        )
        entry = dataclasses.replace(
            entry, loading="package-stubs", loading_why="ImportError: built at install time"
        )
        target = Target("stubbed/losses.py", 6, "log", "torch.log(x)", "forward", "output")
        _, script, fails, stderr, used = _reproducer_that_loads(
            tmp_path, entry, [torch.zeros(3)], target, 0
        )
        assert fails, stderr
        assert (
            used.loading == "extracted" and used.loading_why == "ImportError: built at install time"
        )
        assert "statement by statement" in script
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("stubbed")]:
            del sys.modules[name]


def test_a_compiled_module_the_fresh_process_misses_is_stood_in_for(tmp_path: Path) -> None:
    """gpytorch: the tests' run left the package imported, so the search never stood in for
    its compiled `libfft`; a fresh process dies at `from .. import libfft` in the package's
    own __init__ chain, and neither the package stubs nor extraction get past it (the
    function's module imports the package's other modules). The script is written again
    with a stand-in for the module its traceback names, and then fails on its assertion."""
    package = tmp_path / "builtpkg"
    package.mkdir()
    (package / "__init__.py").write_text("from . import fft\nfrom . import losses\n")
    (package / "fft.py").write_text("from . import libfft\n\n\ndef helper(x):\n    return x\n")
    (package / "losses.py").write_text(
        "import torch\nfrom .fft import helper\n\n\n"
        "def log_of(x):\n    return torch.log(helper(x))\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import types

        sys.modules["builtpkg.libfft"] = types.ModuleType("builtpkg.libfft")  # the tests'
        entry = build_configured(
            tmp_path, EntryConfig("builtpkg.losses:log_of", ("float32[3] in [0, 1]",)), 0
        )
        assert entry.loading == "import" and entry.stand_ins == ()
        target = Target("builtpkg/losses.py", 6, "log", "torch.log(helper(x))", "forward", "output")
        plan, script, fails, stderr, used = _reproducer_that_loads(
            tmp_path, entry, [torch.zeros(3)], target, 0
        )
        assert fails, stderr
        assert used.stand_ins == ("builtpkg.libfft",) and used.loading == "import"
        assert plan["stand_ins"] == ["builtpkg.libfft"]
        assert "install(['builtpkg.libfft'])" in script
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("builtpkg")]:
            del sys.modules[name]
