"""Script mode for TensorFlow: a training script's external values (tf.data batches,
tf.random and numpy draws made by the repository's code) recorded at their call sites and
substituted, a `tf.function` train step seen op by op, runs stopped right after the op.

The end-to-end test runs the real harness in a child process (real TensorFlow, a Keras model,
a compiled train step); the others run the script in this process through
`build_script_entry`, and their reproducers in a plain `python` subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

tf = pytest.importorskip("tensorflow")

from harness_support import with_reproducers  # noqa: E402
from script_support import build as build_script  # noqa: E402
from script_support import line_of, make_script, op_line  # noqa: E402

from analyzers.dynamic.localise import localise  # noqa: E402
from analyzers.dynamic.reproducer import Target  # noqa: E402
from analyzers.dynamic.script import ScriptEntry, minimise_script, render_script  # noqa: E402
from analyzers.dynamic.search import Budget, Searcher  # noqa: E402
from analyzers.static import scan_source  # noqa: E402
from runners.local import LocalRunner  # noqa: E402


def build(root: Path, name: str, op: str, **settings: object) -> ScriptEntry:
    return build_script(root, name, op, "tensorflow", **settings)


def run_python(root: Path, source: str) -> subprocess.CompletedProcess[str]:
    (root / "test_repro.py").write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "test_repro.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": ""},
    )


def fails_then_passes(script: Path, source: str, message: str, fixed_body: str) -> None:
    """The reproducer `source` fails with `message` on the script as it is, and passes once
    the script reads `fixed_body`."""
    failed = run_python(script.parent, source)
    assert failed.returncode != 0, failed.stderr[-2000:]
    assert message in failed.stderr
    script.write_text(fixed_body, encoding="utf-8")
    fixed = run_python(script.parent, source)
    assert fixed.returncode == 0, fixed.stderr[-2000:]


STEERED = """\
import json
import sys

import numpy as np
import tensorflow as tf


def batches():
    x = np.arange(1.0, 33.0, dtype="float32").reshape(32, 1) * np.ones((1, 3), "float32")
    w = (np.arange(32, dtype="float32") % 4) + 1.0
    return tf.data.Dataset.from_tensor_slices({"x": x, "w": w}).batch(4)


def main(progress):
    noise = [tf.random.normal([3]) for _ in range(2)]
    layer = tf.keras.layers.Dense(3)
    scale = np.random.uniform(1.0, 2.0)
    for step, batch in enumerate(batches()):
        with open(progress, "w") as handle:
            handle.write(json.dumps(step))
        h = layer(batch["x"]) * batch["w"][:, None] * scale
        out = tf.math.log(tf.reduce_sum(batch["x"], -1) + tf.reduce_sum(noise[1]) * 0)  # the op
        after = tf.reduce_sum(h)  # a TensorFlow op off the line: the run stops here
        raise RuntimeError("the run went on past the op")
    return out, after


main(sys.argv[1])
"""


def test_values_are_keyed_by_call_site_substituted_and_runs_stop_after_the_op(
    tmp_path: Path,
) -> None:
    progress = tmp_path / "progress.json"
    root, name = make_script(tmp_path / "steered", STEERED)
    original = tf.random.normal
    entry = build(
        root, name, "log", args=(str(progress),), max_values=4, bounds={"random": (-1.0, 1.0)}
    )
    assert tf.random.normal is original and not tf.config.functions_run_eagerly()
    # the two draws on one line are told apart by occurrence; the Dense layer's initial
    # weights are Keras's own draws; max_values keeps the four values nearest the op
    draws = line_of(STEERED, "    noise = [tf.random.normal([3]) for _ in range(2)]")
    scale = line_of(STEERED, "    scale = np.random.uniform(1.0, 2.0)")
    loop = line_of(STEERED, "    for step, batch in enumerate(batches()):")
    assert entry.script.labels == [
        f"random run.py:{draws} #1",
        f"random run.py:{scale} #0",
        f"data run.py:{loop} #0['x']",
        f"data run.py:{loop} #0['w']",
    ]
    assert entry.framework == "tensorflow"
    assert [(s.dtype, s.shape, s.lo, s.hi, s.source) for s in entry.specs] == [
        ("float32", (3,), -1.0, 1.0, "config"),
        ("float64", (), -1.0, 1.0, "config"),
        ("float32", (4, 3), 0.0, 40.0, "observed"),
        ("float32", (4,), 0.0, 40.0, "observed"),
    ]
    assert json.loads(progress.read_text()) == 0  # stopped at the first step, of 8

    tensors = [tf.constant(x.numpy()) for x in entry.start or []]
    (natural,) = entry.call(tensors)
    assert bool(tf.reduce_all(tf.math.is_finite(natural)))
    tensors[2] = tf.zeros([4, 3])
    (out,) = entry.call(tensors)
    assert out.numpy().tolist() == [-np.inf] * 4  # the substituted batch reached the op

    lines = op_line(root, name)
    # a wall-clock budget: room for a loaded machine (28 runs in 10 s under load); ends at
    # the trigger
    outcome = Searcher(entry, str(root / name), lines, "log", budget=Budget(seconds=20.0)).run(
        entry.start
    )
    assert outcome.triggered and outcome.where == "forward", outcome

    def fails(trial: list[torch.Tensor]) -> bool:
        outs = entry.call([tf.constant(x.numpy()) for x in trial])
        return not all(bool(tf.reduce_all(tf.math.is_finite(o))) for o in outs)

    small = minimise_script(entry, outcome.inputs, fails)
    target = Target(name, min(lines), "log", "tf.math.log(...)", "forward")
    source = render_script(entry, small, target, 0)
    head = source.split("def value_")[0]
    assert "import torch" not in head and "import tensorflow as tf" in head
    assert "analyzers" not in source  # it stands alone: no numcheck import
    fails_then_passes(
        root / name,
        source,
        f"log at run.py:{min(lines)} makes NaN/Inf",
        STEERED.replace(
            'tf.math.log(tf.reduce_sum(batch["x"], -1)',
            'tf.math.log(1.0 + tf.reduce_sum(batch["x"], -1)',
        ),
    )


GRADIENT = """\
import numpy as np
import tensorflow as tf


def main():
    data = tf.data.Dataset.from_tensor_slices(np.random.rand(16, 3).astype("float32") + 0.5)
    for x in data.batch(4):
        length = tf.sqrt(tf.reduce_sum(x * x, -1))  # the op
        return length


main()
"""


def test_a_gradient_failure_gets_a_reproducer_that_checks_the_op_derivative(tmp_path: Path) -> None:
    root, name = make_script(tmp_path / "gradient", GRADIENT)
    entry = build(root, name, "sqrt")
    lines = op_line(root, name)
    outcome = Searcher(entry, str(root / name), lines, "sqrt", budget=Budget(seconds=10.0)).run(
        entry.start
    )
    assert outcome.triggered and outcome.where == "backward", outcome
    first = localise(entry, outcome.inputs, str(root), where="backward")  # as the harness
    assert first is not None, "a TF script's trigger is replayed for localisation"
    assert (first["op"], first["node"], first["line"]) == ("Sqrt", "SqrtGrad", min(lines))
    assert first["inputs"] == [entry.script.labels[-1]]  # the batch, named by its call site
    target = Target(name, min(lines), "sqrt", "tf.sqrt(...)", "backward")
    source = render_script(entry, outcome.inputs, target, 0)
    assert "check_gradient=True" in source
    failed = run_python(root, source)
    assert failed.returncode != 0
    assert f"sqrt at run.py:{min(lines)}: its gradient is NaN/Inf" in failed.stderr, failed.stderr[
        -2000:
    ]
    natural = render_script(entry, list(entry.start or []), target, 0)
    assert run_python(root, natural).returncode == 0  # the script's own batch is fine


TRAIN = """\
import numpy as np
import tensorflow as tf


class Scorer(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)

    def call(self, x):
        return tf.squeeze(self.dense(x), -1)


@tf.function
def train_step(model, optimizer, x, w):
    with tf.GradientTape() as tape:
        scores = model(x)
        loss = tf.reduce_sum(scores * w) / tf.reduce_sum(w)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def main():
    features = np.random.rand(64, 4).astype("float32")
    weights = np.random.uniform(0.5, 1.0, size=(64,)).astype("float32")
    model = Scorer()
    optimizer = tf.keras.optimizers.SGD(0.1)
    data = tf.data.Dataset.from_tensor_slices((features, weights)).batch(8)
    for step, (x, w) in enumerate(data):
        loss = train_step(model, optimizer, x + tf.random.normal(tf.shape(x), stddev=0.01), w)
        if step >= 3:
            break


if __name__ == "__main__":
    main()
"""


def test_compiled_train_step_is_confirmed_and_fixed_through_the_harness(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN, encoding="utf-8")
    scan = scan_source(TRAIN, "train.py")
    (finding,) = [f.to_json() for f in scan.findings]
    assert (finding["op"], finding["function"], finding["framework"]) == (
        "div",
        "train_step",
        "tensorflow",
    )
    job = {
        "repo": str(repo),
        "findings": [finding],
        "entries": [],
        "seed": 0,
        # a budget of evaluations' worth: idle, the trigger comes after about 40 runs in 4 s,
        # most of them in the observed box's three-quarter share; a loaded two-core machine
        # ran 40 to 47 in 10 s, leaving the widened box too few (failed twice so)
        "search_seconds": 30.0,
        "finding_timeout": 240.0,
        "fix_timeout": 300.0,
        "harvest": False,
        "script": {"command": "train.py"},
    }
    result = with_reproducers(LocalRunner().run(job, timeout=600), [finding])
    assert result.outcome == "ok", (result.reason, result.stderr[-2000:])
    (record,) = [r for r in result.records if r.get("stage") is None]
    assert record["status"] == "confirmed", record
    box = record["box"]
    assert (box["source"], box["target"]) == ("script", "script: train.py")
    loop = line_of(TRAIN, "    for step, (x, w) in enumerate(data):")
    assert f"data train.py:{loop} #0[1]" in [b["site"] for b in box["inputs"]]
    # the batch of weights the search zeroed is the whole story the reproducer tells
    assert f"'data train.py:{loop} #0[1]': value_" in record["reproducer"]
    failed = run_python(repo, record["reproducer"])
    assert failed.returncode != 0 and "div at train.py:" in failed.stderr, failed.stderr[-2000:]
    (fix_record,) = [r for r in result.records if r.get("stage") == "fix"]
    fix = fix_record["fix"]
    assert fix["status"] == "validated", fix
    # the fused API that removes the division is compared on the line's value, and chosen
    assert (fix["kind"], fix["name"]) == ("stable-api", "divide-no-nan"), fix["rejected"]
    assert "tf.math.divide_no_nan(" in fix["replacement"]
    checks = {c["name"]: c for c in fix["validation"]["checks"]}
    search = checks.pop("search")  # nothing risky is left on the line for it to watch
    assert search["passed"] and not search["ran"] and search["figures"]["watched"] == []
    assert all(c["ran"] and c["passed"] for c in checks.values()), checks
    # compared on the line's value in the first step of each run: the same numbers
    assert checks["equivalence"]["figures"]["compared"] > 0
    assert checks["equivalence"]["figures"]["max_abs"] == 0.0


# each evaluation is a Keras fit (0.1 s here, 0.4 s on a loaded 2-core CI machine): a few
# restarts, then the snap to the box's edge that confirms these, within any machine's time
FIT_BUDGET = Budget(seconds=120.0, restarts=4)

FIT = """\
import numpy as np
import tensorflow as tf


def log_target_loss(y_true, y_pred):
    return tf.reduce_mean(tf.square(y_pred - tf.math.log(y_true)))  # the op


def main():
    x = np.random.rand(32, 4).astype("float32")
    y = np.random.uniform(0.5, 1.0, size=(32, 1)).astype("float32")
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=log_target_loss)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    model.fit(data, epochs=2, shuffle=False, verbose=0)


main()
"""


def test_a_keras_fit_script_has_its_draws_and_fits_batches_as_external_values(
    tmp_path: Path,
) -> None:
    root, name = make_script(tmp_path / "fit", FIT)
    entry = build(root, name, "log")
    # the numpy draws the data are made from, and the first batch fit's train step asked its
    # iterator for (keyed at the `model.fit` line), before the op ran in that step
    draws = [
        line_of(FIT, '    x = np.random.rand(32, 4).astype("float32")'),
        line_of(FIT, '    y = np.random.uniform(0.5, 1.0, size=(32, 1)).astype("float32")'),
    ]
    fit = line_of(FIT, "    model.fit(data, epochs=2, shuffle=False, verbose=0)")
    assert entry.script.labels == [f"random run.py:{n} #0" for n in draws] + [
        f"data run.py:{fit} #0[0]",
        f"data run.py:{fit} #0[1]",
    ]
    (natural,) = entry.call([tf.constant(x.numpy()) for x in entry.start or []])
    assert bool(tf.math.is_finite(natural))  # the loss of fit's first batch, compiled step
    outcome = Searcher(entry, str(root / name), op_line(root, name), "log", budget=FIT_BUDGET).run(
        entry.start
    )
    assert outcome.triggered and outcome.where == "forward", outcome


FIT_FIXED_DATA = """\
import numpy as np
import tensorflow as tf

steps = []


def log_target_loss(y_true, y_pred):
    steps.append(len(steps))
    if len(steps) == 1:  # a warm-up step on the raw targets: the op runs from the second on
        return tf.reduce_mean(tf.square(y_pred - y_true))
    return tf.reduce_mean(tf.square(y_pred - tf.math.log(y_true)))  # the op


def main():
    x = np.linspace(0.0, 1.0, 64, dtype="float32").reshape(16, 4)
    y = np.linspace(0.5, 1.0, 16, dtype="float32").reshape(16, 1)
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=log_target_loss, steps_per_execution=STEPS)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    model.fit(data, epochs=1, shuffle=False, verbose=0)


main()
"""


@pytest.mark.parametrize("steps", [1, 2])
def test_fits_batches_are_steered_and_reproduced_without_a_single_draw(
    tmp_path: Path, steps: int
) -> None:
    # no random draw makes the data: only fit's batches can reach the op, which runs from
    # the second step on. One step per execution asks the iterator's `get_next`; two ask
    # `get_next_as_optional`, the second batch from inside the execution's loop, 21 frames
    # below the `model.fit` line.
    body = FIT_FIXED_DATA.replace("STEPS", str(steps))
    root, name = make_script(tmp_path / f"fit{steps}", body)
    entry = build(root, name, "log")
    fit = line_of(body, "    model.fit(data, epochs=1, shuffle=False, verbose=0)")
    assert entry.script.labels == [f"data run.py:{fit} #{n}[{i}]" for n in (0, 1) for i in (0, 1)]
    x1, y1 = (x.numpy() for x in (entry.start or [])[2:])
    assert x1.shape == (4, 4) and y1.shape == (4, 1)
    assert np.allclose(y1[:, 0], np.linspace(0.5, 1.0, 16)[4:8])  # the second batch, as read

    lines = op_line(root, name)
    outcome = Searcher(entry, str(root / name), lines, "log", budget=FIT_BUDGET).run(entry.start)
    assert outcome.triggered and outcome.where == "forward", outcome
    y1 = outcome.inputs[3].numpy()
    assert (y1 <= 0).any()  # the second batch's targets were steered out of log's domain
    first = localise(entry, outcome.inputs, str(root))
    assert first is not None and (first["op"], first["line"]) == ("Log", min(lines)), first

    target = Target(name, min(lines), "log", "tf.math.log(...)", "forward")
    source = render_script(entry, outcome.inputs, target, 0)
    fails_then_passes(
        root / name,
        source,
        f"log at run.py:{min(lines)} makes NaN/Inf",
        body.replace("tf.math.log(y_true)", "tf.math.log(tf.maximum(y_true, 1e-6))"),
    )
