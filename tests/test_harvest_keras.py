"""Recorded TensorFlow calls and Keras layers: the repository's tests build a layer, move one
of its variables and call it; the finding inside `call` is searched on the recorded layer (its
variables, its observed input range) and the reproducer rebuilds the layer without the tests.
A TensorFlow function's recorded call is replayed the same way, and a Keras layer with no tests
is built with its defaults (synthesised).

The harness runs once per module (a real child process, the real local runner, real
TensorFlow); the rest runs in process on `entry_from_call` with calls recorded by `harvest`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from harness_support import Run, run_findings, run_script, write_repo  # noqa: E402

from analyzers.dynamic.harvest import Construction, HarvestedMethod, Recorded, entry_from_call  # noqa: E402
from analyzers.dynamic.harvest_keras import KerasOwner, KerasReplay, to_torch  # noqa: E402

LAYERS = '''\
import tensorflow as tf


class Centred(tf.keras.layers.Layer):
    """log of the squared distance to a centre: -inf when a row sits on it. A fresh centre
    is -1, outside every input the tests use; the tests move it to 0.5."""

    def __init__(self, units: int = 3, eps: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.eps = eps

    def build(self, input_shape):
        self.proj = self.add_weight(shape=(input_shape[-1], self.units), name="proj")
        self.centre = self.add_weight(shape=(input_shape[-1],), initializer="zeros",
                                      trainable=False, name="centre")
        self.centre.assign(tf.fill([input_shape[-1]], -1.0))

    def call(self, x):
        d = x - self.centre
        return tf.math.log(tf.reduce_sum(d * d, axis=-1) + self.eps) + tf.reduce_sum(
            tf.matmul(x, self.proj), -1)  # @centred


class Scale:
    def __init__(self, value: float) -> None:
        self.value = value


class Configured(tf.keras.layers.Layer):
    def __init__(self, scale: Scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale.value

    def call(self, x):
        return tf.math.log(tf.abs(x) * self.scale)  # @configured


class Pooled(tf.keras.layers.Layer):
    """No tests: built with its defaults and called through __call__."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = tf.keras.layers.Dense(3)

    def call(self, x):
        h = self.dense(x)
        return tf.math.sqrt(tf.reduce_sum(tf.square(tf.nn.relu(h)), axis=-1))  # @pooled


def row_norm(x, scale=1.0):
    return tf.math.sqrt(tf.reduce_sum(x * x, axis=-1)) * scale  # @row-norm
'''

TESTS = """\
import tensorflow as tf

from mods.layers import Centred, Configured, Scale, row_norm


def test_centred():
    layer = Centred(3)
    layer.build((5, 4))
    layer.centre.assign(tf.fill([4], 0.5))
    out = layer(tf.random.uniform((5, 4)))
    assert out.shape == (5,)
    layer.centre.assign(tf.fill([4], 7.0))  # after the call: not what the call saw


def test_configured():
    assert Configured(Scale(2.0))(tf.random.uniform((5, 3)) * 4).shape == (5, 3)


def test_row_norm():
    assert row_norm(tf.random.uniform((3, 4)) + 1.0).shape == (3,)
"""


def write_layers_repo(root: Path) -> Path:
    return write_repo(
        root / "repo",
        {"mods/__init__.py": "", "mods/layers.py": LAYERS, "tests/test_layers.py": TESTS},
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    repo = write_layers_repo(tmp_path_factory.mktemp("harvest-keras"))
    return run_findings(
        repo,
        "mods/layers.py",
        ["Centred.call", "Configured.call", "Pooled.call", "row_norm"],
        finding_timeout=90.0,
        timeout=400,
    )


def line_of(marker: str) -> int:
    (line,) = [i for i, text in enumerate(LAYERS.splitlines(), 1) if text.endswith(marker)]
    return line


def test_layer_finding_is_confirmed_on_the_recorded_layer(run: Run) -> None:
    record = run.record("Centred.call")
    assert record["status"] == "confirmed", record
    assert record["box"] == {
        "source": "harvested",
        "target": "mods.layers:Centred.call",
        "inputs": [
            {
                "dtype": "float32",
                "shape": [5, 4],
                "lo": 0.0,
                "hi": 1.0,
                "source": "observed",
                "keeps_sign": True,
            }
        ],
    }
    # only the recorded centre (0.5) is reachable from the observed box [0, 1]: the fresh
    # centre (-1) and the one the test set after the call (7) are not
    assert [0.5] * 4 in record["trigger"]["inputs"][0]["values"]
    assert record["trigger"]["where"] == "forward"
    # localised through TensorFlow's op callbacks: the log of 0, on the layer's line
    assert record["trigger"]["first_nonfinite"] == {
        "op": "Log",
        "path": "mods/layers.py",
        "line": line_of("@centred") - 1,
        "where": "forward",
    }


def test_reproducer_rebuilds_the_layer_and_fails_only_because_of_its_variables(run: Run) -> None:
    script = run.record("Centred.call")["reproducer"]
    assert "from mods.layers import Centred" in script
    assert "model = Centred(3)" in script
    assert "model.build_from_config({'input_shape': (5, 4)})" in script
    assert "np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32)" in script
    assert "model.call(x)" in script
    failed = run_script(run.repo, script)
    assert failed.returncode != 0 and "AssertionError" in failed.stderr, failed.stderr[-2000:]
    start = script.index("    model.set_weights(")
    end = script.index("])\n", start) + 3
    passed = run_script(run.repo, script[:start] + script[end:])  # the fresh centre: -1
    assert passed.returncode == 0, passed.stderr[-2000:]


def test_unspellable_constructor_is_searched_but_gets_an_honest_reason(run: Run) -> None:
    record = run.record("Configured.call")
    assert record["status"] == "potential" and "reproducer" not in record, record
    assert record["box"]["source"] == "harvested"
    assert record["trigger"]["where"] == "forward"
    assert "no standalone reproducer" in record["error"]
    assert "mods.layers.Scale, which a script cannot spell" in record["error"]


def test_recorded_tensorflow_function_is_replayed_with_its_observed_box(run: Run) -> None:
    record = run.record("row_norm")
    assert record["status"] == "confirmed", record
    assert record["box"]["source"] == "harvested"
    (box,) = record["box"]["inputs"]
    # the tests fed [1, 2): the box keeps non-negatives non-negative, widened tenfold
    assert box["source"] == "observed" and box["lo"] == 0.0 and 10.0 < box["hi"] <= 20.0
    assert record["trigger"]["where"] == "backward"
    first = record["trigger"]["first_nonfinite"]  # the sqrt's gradient at a zero row
    assert (first["op"], first["path"], first["line"], first["where"], first["node"]) == (
        "Sqrt",
        "mods/layers.py",
        line_of("@row-norm"),
        "backward",
        "SqrtGrad",
    )
    assert first["reaches_inputs"] is True and first["inputs"] == ["x"]
    failed = run_script(run.repo, record["reproducer"])
    assert failed.returncode != 0 and "gradient reaching x is NaN/Inf" in failed.stderr


def test_untested_keras_layer_is_synthesised_with_its_defaults(run: Run) -> None:
    record = run.record("Pooled.call")
    assert record["status"] == "confirmed", record
    assert record["box"]["source"] == "synthesised"
    first = record["trigger"]["first_nonfinite"]  # the sqrt's gradient reaches the Dense
    assert (first["op"], first["line"], first["where"]) == ("Sqrt", line_of("@pooled"), "backward")
    assert first["parameters"] == ["pooled/dense/bias", "pooled/dense/kernel"]
    script = record["reproducer"]
    # Keras initialisers follow Keras's seed; the layer builds itself when called
    assert "tf.keras.utils.set_random_seed(0)" in script and "out = model(x)" in script
    failed = run_script(run.repo, script)
    assert failed.returncode != 0 and "AssertionError" in failed.stderr, failed.stderr[-2000:]


def test_fix_is_validated_on_a_rebuilt_patched_layer(run: Run) -> None:
    fix = run.record("Centred.call", stage="fix")["fix"]
    assert fix["status"] == "validated", fix
    assert "+        return tf.math.log(" in fix["diff"]
    checks = {c["name"]: c for c in fix["validation"]["checks"]}
    assert checks["reproducer"]["passed"] and checks["search"]["passed"], checks


# ---------------------------------------------------------------- in process


class Counting(tf.keras.layers.Layer):
    """Changes a variable on every call, as BatchNormalization's moving statistics do."""

    def build(self, input_shape):
        self.calls = self.add_weight(shape=(), initializer="zeros", trainable=False)

    def call(self, x):
        self.calls.assign_add(1.0)
        return tf.math.log(x) * self.calls


def test_replay_restores_the_recorded_variables_before_every_call() -> None:
    layer = Counting()
    x = tf.constant([[1.0, 2.0]])
    layer(x)
    recorded = Recorded(
        (to_torch(x),), {}, KerasOwner.at_call(layer), Construction((), {}), "tensorflow"
    )
    layer(x)  # the tests go on using the layer: the recording keeps the first state
    entry = entry_from_call(f"{__name__}:Counting.call", recorded, Counting.call)
    assert isinstance(entry, HarvestedMethod) and isinstance(entry.fn, KerasReplay)
    assert entry.framework == "tensorflow" and entry.specs[0].source == "observed"
    first = entry.call([recorded.args[0]])
    second = entry.call([recorded.args[0]])
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    np.testing.assert_allclose(first.numpy(), np.log([[1.0, 2.0]]) * 2.0, rtol=1e-6)


def test_layer_holding_state_outside_its_variables_gets_no_script() -> None:
    class Hidden(tf.keras.layers.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.offset = 0.0

        def call(self, x):
            return tf.math.log(x - self.offset)

    layer = Hidden()
    layer.offset = 3.0  # a plain attribute the rebuild cannot know
    x = tf.constant([[4.0, 5.0]])
    recorded = Recorded(
        (to_torch(x),), {}, KerasOwner.at_call(layer), Construction((), {}), "tensorflow"
    )
    Hidden.__module__, Hidden.__qualname__ = __name__, "Hidden"
    globals()["Hidden"] = Hidden
    entry = entry_from_call(f"{__name__}:Hidden.call", recorded, Hidden.call)
    assert isinstance(entry, HarvestedMethod)
    reason = entry.module_script.reason
    assert reason is not None and "keeps state outside its variables" in reason
