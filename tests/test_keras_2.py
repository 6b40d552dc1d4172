"""Keras 2 code on today's TensorFlow: a job whose `keras` is "2" (runners/keras_generation.py)
runs the PR's code with `tf.keras` as tf_keras, and its reproducer makes the same choice for
its reader. The metric and the layer below are written the Keras 2 way (`add_weight(name,
shape=...)`, which Keras 3 refuses): the metric's `result()` before any update divides zero by
zero, and the layer's log fails where its input sits on its centre.

The real harness in a child process (the local runner), real TensorFlow and tf_keras.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("tf_keras")

from harness_support import Run, run_findings, run_script, write_repo  # noqa: E402

METRIC = """\
import tensorflow as tf


class MeanValue(tf.keras.metrics.Metric):
    def __init__(self, name="mean_value", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_weight("total", shape=(), initializer="zeros")
        self.count = self.add_weight("count", shape=(), initializer="zeros")

    def update_state(self, values, sample_weight=None):
        self.total.assign_add(tf.reduce_sum(values))
        self.count.assign_add(tf.cast(tf.size(values), tf.float32))

    def result(self):
        return self.total / tf.cast(self.count, self.dtype)


@tf.function
def shifted(x, centre):
    if tf.reduce_max(x) > 100.0:  # Python control flow on a tensor: AutoGraph's, or eager
        return x
    return x - centre


class Centred(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.centre = self.add_weight("centre", shape=(input_shape[-1],), initializer="zeros")

    def call(self, x):
        return tf.math.log(tf.abs(shifted(x, self.centre)))
"""


def _run(root: Path, keras: str) -> Run:
    repo = write_repo(root, {"metrics/__init__.py": "", "metrics/mean.py": METRIC})
    return run_findings(
        repo,
        "metrics/mean.py",
        ["Centred.call", "MeanValue.result"],
        finding_timeout=90.0,
        timeout=300,
        harvest=False,
        keras=keras,
    )


@pytest.fixture(scope="module")
def on_keras_2(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run(tmp_path_factory.mktemp("keras-2"), "2")


def test_a_fresh_keras_2_metric_is_proven_on_tf_keras(on_keras_2: Run) -> None:
    """Built from its constants alone (the constructor takes no tensor, result() no
    argument) and called once: 0 / 0, found with the metric's AutoGraph conversion off."""
    record = on_keras_2.record("MeanValue.result")
    assert record["status"] == "confirmed", record
    assert record["trigger"]["where"] == "forward" and record["trigger"]["inputs"] == []


def test_a_keras_2_layer_is_seen_at_its_own_lines(on_keras_2: Run) -> None:
    """Keras 2 converts `call` with AutoGraph on every call, even eagerly, and the converted
    code runs from a generated file; with AutoGraph off, and the tf.function it calls run
    eagerly (traced without AutoGraph, its `if` on a tensor would be refused), the log of
    |x - centre| is reached at its line and fails at x = centre."""
    record = on_keras_2.record("Centred.call")
    assert record["status"] == "confirmed", record
    assert record["trigger"]["where"] == "forward"


def test_its_reproducer_chooses_keras_2_itself(on_keras_2: Run) -> None:
    """Run in a plain python child whose environment does not choose tf_keras: the reproducer
    sets TF_USE_LEGACY_KERAS before importing TensorFlow, and fails as the sandbox's run did;
    without that line, Keras 3 refuses the metric's constructor instead."""
    script = on_keras_2.record("MeanValue.result")["reproducer"]
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in script
    failed = run_script(on_keras_2.repo, script)
    assert failed.returncode != 0 and "AssertionError" in failed.stderr, failed.stderr[-2000:]
    on_keras_3 = run_script(
        on_keras_2.repo, script.replace('"TF_USE_LEGACY_KERAS", "1"', '"X", "1"')
    )
    assert "got multiple values for argument 'shape'" in on_keras_3.stderr, on_keras_3.stderr[
        -2000:
    ]


def test_on_keras_3_the_same_code_cannot_be_built(tmp_path: Path) -> None:
    run = _run(tmp_path, "3")
    for function in ("Centred.call", "MeanValue.result"):
        record = run.record(function)
        assert record["status"] == "error", record
        assert "add_weight" in record["error"], record  # Keras 3's refusal of its arguments
