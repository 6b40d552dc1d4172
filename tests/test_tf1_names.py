"""TensorFlow 1 code on TensorFlow 2: a module that reads `tf.to_float` or `tf.mod`, names
TensorFlow 2 dropped from its top level and kept in `tf.compat.v1`, runs with those names
bound to TensorFlow 1's own functions (moved.py), in the search and in the reproducer. The
function below is a sinusoidal position signal written the 2017 way: with two channels it
has one timescale and divides by `1 - 1`.

The real harness in a child process (the local runner), real TensorFlow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from harness_support import run_findings, run_script, write_repo  # noqa: E402

from analyzers.dynamic import moved  # noqa: E402
from analyzers.dynamic.writer import PlanError, _moved  # noqa: E402
from analyzers.static import scan_source  # noqa: E402

SIGNAL = """\
import math

import tensorflow as tf


def position_signal(x, shortest=1.0, longest=1.0e4):
    \"\"\"x: a Tensor of shape [batch, length, channels].\"\"\"
    length = tf.shape(x)[1]
    channels = tf.shape(x)[2]
    steps = tf.to_float(tf.range(length))
    scales = channels // 2
    increment = math.log(longest / shortest) / (tf.to_float(scales) - 1)
    inverse = shortest * tf.exp(tf.to_float(tf.range(scales)) * -increment)
    angles = tf.expand_dims(steps, 1) * tf.expand_dims(inverse, 0)
    signal = tf.concat([tf.sin(angles), tf.cos(angles)], axis=1)
    signal = tf.pad(signal, [[0, 0], [0, tf.mod(channels, 2)]])
    return x + tf.reshape(signal, [1, length, channels])
"""


def test_tensorflow_1_names_run_as_tensorflow_1s_functions(tmp_path: Path) -> None:
    """The division is proven at two channels, and the reproducer, a fresh Python where
    `tf.to_float` does not exist, binds it and `tf.mod` to tf.compat.v1's before it
    imports the code."""
    repo = write_repo(tmp_path, {"timing/__init__.py": "", "timing/signal.py": SIGNAL})
    run = run_findings(
        repo,
        "timing/signal.py",
        ["position_signal", "position_signal"],  # the division and the exp after it
        finding_timeout=120,
        timeout=300,
        search_seconds=1.0,
        harvest=False,
        fix=False,
    )
    division = scan_source(SIGNAL, "timing/signal.py").findings[0]
    assert division.op == "div"
    (record,) = [
        r
        for r in run.result.records
        if r["fingerprint"] == division.fingerprint and r.get("stage") is None
    ]
    assert record["status"] == "confirmed", __import__("json").dumps(record, indent=1)[:6000]
    check = run_script(repo, record["reproducer"])
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]
    assert "tensorflow.to_float = tensorflow.compat.v1.to_float" in record["reproducer"]
    assert "tensorflow.mod = tensorflow.compat.v1.mod" in record["reproducer"]


def test_only_names_tensorflow_2_dropped_are_bound() -> None:
    """`tf.where` is TensorFlow 2's own (it changed meaning): never replaced by TF1's;
    `tf.compat.v1` is already TensorFlow 1's API; a name neither has is left to fail."""
    import tensorflow as tf

    source = "import tensorflow as tf\ny = tf.where(c, a, b) + tf.no_such_op(x)\n"
    assert moved.restore_named_in(source) == []
    assert tf.where is not tf.compat.v1.where
    assert moved.restore_named_in("import tensorflow.compat.v1 as tf\ntf.to_int32(x)\n") == []


def test_a_plan_may_name_only_a_move_numcheck_makes() -> None:
    """The sandbox writes the plan; its moved names become code in the reproducer."""
    assert _moved("tensorflow.to_float") == "tensorflow.to_float"
    assert _moved("collections.Mapping") == "collections.Mapping"
    forged = (
        "os.system",
        "tensorflow.to_float; import os",
        "tensorflow.a.b",
        "tensorflow.__class__",
        "tensorflow.if",
        "tensorflow.ｘ",
        3,
    )
    for forged_name in forged:
        with pytest.raises(PlanError):
            _moved(forged_name)
