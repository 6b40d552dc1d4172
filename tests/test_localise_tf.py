"""Localisation of the first NaN/Inf on real TensorFlow 2 (eager) code: forward ops seen
through TensorFlow's op callbacks, and gradient ops mapped back to the forward op (and the
user's line) they differentiate.

The code under test is a small package written to a temporary repository root; TensorFlow's
own library functions (`tf.linalg.normalize`, `tf.norm`) live outside it, so the user's line
is the one that calls into them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

tf = pytest.importorskip("tensorflow")

from analyzers.dynamic.entries import EntryConfig, build_configured  # noqa: E402
from analyzers.dynamic.localise import localise  # noqa: E402

USER = """\
import tensorflow as tf


def log_of(x):
    h = x * 2.0
    return tf.math.log(h)  # @log


def normalised(x):
    y = x + 0.0
    unit, _ = tf.linalg.normalize(y)  # @normalize
    return unit * 2.0


def masked_softmax(x):
    scores = tf.where(x > 0.0, x, tf.fill(tf.shape(x), float("-inf")))  # @mask
    return tf.nn.softmax(scores)  # @softmax


def root_of_log(x):
    y = tf.math.log(x)  # @first
    return tf.sqrt(y * y + 1.0)  # @passes-on


def ratio_of_log(x):
    y = tf.math.log(x)  # @numerator-first
    return y / (x * x + 1.0)  # @divides-on


def norm_of(x):
    squares = x * x
    return tf.sqrt(tf.reduce_sum(squares))  # @sqrt


def through_library(x):
    y = x + 0.0
    return tf.norm(y) * 3.0  # @library


def finite_everywhere(x):
    return tf.reduce_sum(tf.exp(-tf.abs(x)))


def raises_after_nan(x):
    y = tf.math.log(x - 1.0)  # @raises
    raise ValueError(f"no use for {y.shape}")


@tf.function
def compiled_log(x):
    return tf.math.log(x)  # @compiled


def calls_a_function(x):
    return compiled_log(x) + 1.0  # @function


@tf.function
def graph_only_log(x):
    # stands in for a graph that computes otherwise than its eager run (XLA, fused kernels):
    # the Python branch is taken when the function is traced, not when it runs eagerly
    if tf.config.functions_run_eagerly():
        return x
    return tf.math.log(x)


def calls_a_graph_only_failure(x):
    return graph_only_log(x) + 1.0  # @graph


class Angle(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(4,), initializer="zeros", name="w")
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")
        self.w.assign([1.0, 0.0, 0.0, 0.0])

    def call(self, x):
        cos = tf.clip_by_value(tf.reduce_sum(x * self.w, -1), -1.0, 1.0)
        return tf.acos(cos) + self.scale  # @acos
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("localise_tf") / "repo"
    (root / "tflocpkg").mkdir(parents=True)
    (root / "tflocpkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "tflocpkg" / "user.py").write_text(USER, encoding="utf-8")
    yield root
    while str(root.resolve()) in sys.path:
        sys.path.remove(str(root.resolve()))
    for name in [m for m in sys.modules if m.startswith("tflocpkg")]:
        del sys.modules[name]


def line_of(marker: str) -> int:
    (line,) = [i for i, text in enumerate(USER.splitlines(), 1) if text.endswith(marker)]
    return line


def entry(repo: Path, name: str, inputs: tuple[str, ...] = ("float32[4]",)) -> Any:
    built = build_configured(repo, EntryConfig(f"tflocpkg.user:{name}", inputs), seed=0)
    assert built.framework == "tensorflow"
    return built


def no_callbacks_left() -> bool:
    from tensorflow.python.eager import context

    return not context.context().op_callbacks


def test_forward_names_the_op_at_the_users_line(repo: Path) -> None:
    """log(2 * 0): the multiply before it is fine."""
    found = localise(entry(repo, "log_of"), [torch.zeros(4)], str(repo))
    assert found == {
        "op": "Log",
        "path": "tflocpkg/user.py",
        "line": line_of("@log"),
        "where": "forward",
    }
    assert no_callbacks_left()


def test_forward_inside_a_library_function_names_the_users_calling_line(repo: Path) -> None:
    """tf.linalg.normalize divides by the norm inside TensorFlow: 0 / 0."""
    found = localise(entry(repo, "normalised"), [torch.zeros(4)], str(repo))
    assert found == {
        "op": "RealDiv",
        "path": "tflocpkg/user.py",
        "line": line_of("@normalize"),
        "where": "forward",
    }


def test_a_deliberate_minus_infinity_mask_is_not_the_failure(repo: Path) -> None:
    """The fill and the where write -inf on purpose; the NaN comes out of the softmax of a
    row with nothing left unmasked. With one entry unmasked nothing fails."""
    found = localise(entry(repo, "masked_softmax"), [-torch.ones(4)], str(repo))
    assert found is not None
    assert (found["op"], found["line"]) == ("Softmax", line_of("@softmax"))
    assert (
        localise(entry(repo, "masked_softmax"), [torch.tensor([1.0, -1.0, 2.0, -3.0])], str(repo))
        is None
    )


def test_forward_localisation_stays_silent_on_a_gradient_only_failure(repo: Path) -> None:
    assert localise(entry(repo, "norm_of"), [torch.zeros(4)], str(repo)) is None


def test_code_that_raises_still_reports_the_nan_before_and_removes_the_callback(repo: Path) -> None:
    found = localise(entry(repo, "raises_after_nan"), [torch.zeros(4)], str(repo))
    assert found is not None
    assert (found["op"], found["line"]) == ("Log", line_of("@raises"))
    assert no_callbacks_left()


def test_the_op_inside_a_tf_function_is_found_on_its_own_line(repo: Path) -> None:
    found = localise(entry(repo, "calls_a_function"), [torch.zeros(4)], str(repo))
    assert found is not None
    assert (found["op"], found["line"]) == ("Log", line_of("@compiled"))
    assert not tf.config.functions_run_eagerly()  # the replay's setting does not outlive it


def test_a_failure_only_the_compiled_graph_makes_names_the_function(repo: Path) -> None:
    found = localise(entry(repo, "calls_a_graph_only_failure"), [torch.zeros(4)], str(repo))
    assert found is not None
    assert (found["op"], found["line"]) == ("graph_only_log", line_of("@graph"))
    assert not tf.config.functions_run_eagerly()
    assert no_callbacks_left()


def test_backward_names_sqrt_of_a_sum_of_squares_at_zero(repo: Path) -> None:
    found = localise(entry(repo, "norm_of"), [torch.zeros(4)], str(repo), where="backward")
    assert found is not None
    json.dumps(found)  # it travels in the harness's JSON record
    assert (found["op"], found["path"], found["line"]) == (
        "Sqrt",
        "tflocpkg/user.py",
        line_of("@sqrt"),
    )
    assert found["where"] == "backward" and found["node"] == "SqrtGrad"
    assert found["reaches_inputs"] is True and found["inputs"] == ["x"]
    assert found["reaches_parameters"] is False and found["parameters"] == []
    assert no_callbacks_left()


def test_backward_at_a_finite_point_finds_nothing(repo: Path) -> None:
    """Away from zero every gradient is finite: no op may be blamed."""
    assert localise(entry(repo, "norm_of"), [torch.ones(4)], str(repo), where="backward") is None
    assert (
        localise(entry(repo, "finite_everywhere"), [torch.zeros(4)], str(repo), where="backward")
        is None
    )


def test_backward_inside_a_library_function_names_the_users_calling_line(repo: Path) -> None:
    """tf.norm takes the square root inside TensorFlow; its gradient is infinite at 0."""
    found = localise(entry(repo, "through_library"), [torch.zeros(4)], str(repo), where="backward")
    assert found is not None
    assert (found["op"], found["path"], found["line"], found["node"]) == (
        "Sqrt",
        "tflocpkg/user.py",
        line_of("@library"),
        "SqrtGrad",
    )
    assert found["reaches_inputs"] is True


def test_backward_request_still_reports_a_forward_nan_first(repo: Path) -> None:
    """When the forward already made the NaN, that is where it first appeared."""
    found = localise(entry(repo, "log_of"), [torch.zeros(4)], str(repo), where="backward")
    assert found is not None and found["where"] == "forward"
    assert found["op"] == "Log"


def test_backward_acos_at_one_reaches_inputs_and_the_layers_weight(repo: Path) -> None:
    """acos'(1) is -inf (a reciprocal of 0 inside acos's gradient); times w = [1, 0, 0, 0]
    it is NaN for x, and times x for w. The scale weight only sees the finite gradient of
    the sum."""
    angle = entry(repo, "Angle")
    found = localise(angle, [torch.tensor([1.0, 0.0, 0.0, 0.0])], str(repo), where="backward")
    assert found is not None
    assert (found["op"], found["path"], found["line"], found["node"]) == (
        "Acos",
        "tflocpkg/user.py",
        line_of("@acos"),
        "Reciprocal",
    )
    assert found["reaches_inputs"] is True and found["inputs"] == ["x"]
    assert found["reaches_parameters"] is True
    assert [p.rsplit("/", 1)[-1].split(":")[0] for p in found["parameters"]] == ["w"]
    assert no_callbacks_left()


def test_keras_3_ops_are_confirmed_on_tensorflow(tmp_path: Path) -> None:
    """`keras.ops` calls (Keras 3, whose backend here is TensorFlow) are the catalogue's
    `keras` framework: the dynamic pass runs them rather than leaving them `potential`."""
    from harness_support import confirmed_reproducer, run_findings, write_repo

    repo = write_repo(
        tmp_path,
        {
            "kpkg/__init__.py": "",
            "kpkg/norm.py": (
                "from keras import ops\n\n\n"
                "def normalize(x, axis=-1):\n"
                "    square_sum = ops.sum(ops.square(x), axis=axis, keepdims=True)\n"
                "    return x * ops.rsqrt(square_sum)\n"
            ),
        },
    )
    run = run_findings(
        repo, "kpkg/norm.py", ["normalize"], finding_timeout=120, timeout=300, search_seconds=2.0
    )
    confirmed_reproducer(repo, run)


def _searched(repo: Path, name: str, marker: str, op: str) -> Any:
    from analyzers.dynamic.search import Budget
    from analyzers.dynamic.stages import staged_search

    path = str((repo / "tflocpkg" / "user.py").resolve())
    lines = frozenset({line_of(marker)})
    return staged_search(entry(repo, name), path, lines, op, 0, Budget(seconds=2.0))[1]


def test_an_op_that_only_passes_on_an_earlier_nan_is_not_proven(repo: Path) -> None:
    """sqrt(y * y + 1) of y = log(x): its operand is never below 1, and NaN only where the
    log above made it so. sqrt's derivative read at that NaN is NaN whatever sqrt does, which
    once "proved" the sqrt in the backward pass; the log is the finding with the proof."""
    assert not _searched(repo, "root_of_log", "@passes-on", "sqrt").triggered
    first = _searched(repo, "root_of_log", "@first", "log")
    assert first.triggered and first.where == "forward"


def test_a_masked_softmax_row_fails_forward_with_its_mask_allowed(repo: Path) -> None:
    """The -inf entries are the mask itself (as in the torch search): a row with every entry
    masked is softmax's own NaN, in the forward pass."""
    found = _searched(repo, "masked_softmax", "@softmax", "softmax")
    assert found.triggered and found.where == "forward", found


def test_code_as_written_leaves_a_tf_function_its_own_conversion() -> None:
    """Keras 2 code runs with AutoGraph off (entry.code_as_written), and a tf.function first
    traced then still converts its body: its trace sets AutoGraph's status itself, so its
    `if` on a tensor becomes a tf.cond instead of a refused Python bool."""
    from analyzers.dynamic.entry import code_as_written

    @tf.function
    def doubled_when_positive(x: Any) -> Any:
        if tf.reduce_max(x) > 0.0:
            return x * 2.0
        return x

    assert not tf.config.functions_run_eagerly()  # traced, not run as plain Python
    with code_as_written():
        assert float(doubled_when_positive(tf.constant([1.5]))[0]) == 3.0
        assert float(doubled_when_positive(tf.constant([-1.5]))[0]) == -1.5


def test_a_division_that_only_passes_on_an_earlier_nan_numerator_is_not_proven(repo: Path) -> None:
    """log(x) / (x * x + 1): the divisor is at least 1, and the quotient is NaN or -inf only
    where the log above made the numerator so. Only the divisor was checked once, which
    "proved" such divisions on real code (Keras's learning-rate schedules dividing a 0/0 made
    on an earlier line); the log holds the proof."""
    assert not _searched(repo, "ratio_of_log", "@divides-on", "div").triggered
    first = _searched(repo, "ratio_of_log", "@numerator-first", "log")
    assert first.triggered and first.where == "forward"
