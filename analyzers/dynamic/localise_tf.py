"""Where NaN/Inf first appears in TensorFlow 2 (eager) code: localise.py for TensorFlow.

TensorFlow has no dispatch mode like `TorchFunctionMode`, but every op it executes eagerly
passes its op callbacks (`op_callbacks.add_op_callback`, what
`tf.debugging.enable_check_numerics` is built on) with the op's type, attributes, inputs and
outputs, and the Python stack of the call that ran it. The callback is installed for the
replay only (thread-local, removed in `finally`) and never raises into the code.

Forward failures: the first op that makes a NaN from NaN-free inputs, or an infinity from
finite ones, is named by its TensorFlow op type as TensorFlow names it ("Log", "Rsqrt",
"RealDiv" for `/`, "Sqrt"), on the innermost line of the repository's own code on the stack:
an op inside a library (`tf.linalg.normalize`, a Keras layer) is reported on the user's line
that called it. An infinity the code writes on purpose is not a failure: a `-inf` constant
comes in as an op input (`tf.fill`, `tf.where(mask, x, -inf)`) and an infinite float
attribute is skipped, as torch's `_writes_infinity`. A variable read (`ReadVariableOp`) is
a source, not a computation: a weight that already holds NaN is not blamed on the read.

Backward failures: the forward is replayed under a persistent `tf.GradientTape` watching the
float inputs (and, as the tape does by default, every trainable variable the code reads: a
Keras layer's weights), recording for each forward op its output tensors' tape ids
(`EagerTensor._id`) with its type and the user's line. The finite float outputs are summed and
`tape.gradient` runs the gradient functions eagerly through the same callback: the first
gradient op that turns finite inputs into a non-finite output is the culprit, reported as
`node` (the gradient op: "SqrtGrad", "Reciprocal", "Rsqrt"). Each registered gradient function
(`_SqrtGrad`) is called by `backprop._gradient_function(op_name, ..., inputs, outputs, ...)`
with a mock of the forward op; that frame, found on the culprit's stack, gives the forward
op's type (`op`: "Sqrt", "Log", "Acos") and the tensors the tape kept for it. The user's line
is the one recorded for the forward op that made those outputs (or, when the gradient keeps
only the inputs, the forward op of that type that read exactly those inputs).

Not recovered: a gradient op with no forward op behind it (a `tf.custom_gradient`'s own
function, the tape's gradient aggregation) is named by the gradient op itself, on the
repository's line of a custom gradient where there is one, else with no line; a forward op
matched by neither its outputs nor its inputs (a gradient that keeps no tensors) is named
with no line.

`tf.function`s: the replay runs them eagerly first (`tf.config.run_functions_eagerly`), so the
ops inside a compiled step are seen one by one, on their own lines. Where that replay sees no
failure (a graph's fused kernels or XLA compute otherwise), the compiled replay follows, in
which a function runs as one graph op: it is named by the function ("__inference_step_12" ->
"step"), on the line that called it, forward and backward alike.

Script entries (script_tf.py) are replayed the same way: the script runs once more with the
trigger's external values, and stops right after the flagged op (the run already executes
its `tf.function`s eagerly); backward, the gradient runs from the line's value back to the
substituted values.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any

import numpy as np
import torch

from analyzers.dynamic.entry import Entry
from analyzers.dynamic.frames import MAX_NAMED, UserFrames, input_names

MAX_FRAMES = 120  # Keras layers and TensorFlow's dispatch wrappers nest deep
SOURCES = frozenset({"ReadVariableOp", "ResourceGather", "VarHandleOp"})  # variable reads
FUNCTION = re.compile(r"^__(?:inference|forward|backward)_(.+?)_\d+$")
HERE = os.path.realpath(__file__)


def _arrays(tensors: Sequence[Any]) -> list[np.ndarray]:
    """The float and complex values among an op's inputs or outputs, on the host (numpy, so
    that the callback runs no TensorFlow op of its own)."""
    arrays = []
    for t in tensors:
        dtype = getattr(t, "dtype", None)
        if not (getattr(dtype, "is_floating", False) or getattr(dtype, "is_complex", False)):
            continue
        try:
            a = np.asarray(t.numpy())
        except Exception:  # a symbolic tensor: no value to look at
            continue
        arrays.append(a if np.iscomplexobj(a) else a.astype(np.float64))
    return arrays


def _finite(arrays: list[np.ndarray]) -> bool:
    return all(bool(np.isfinite(a).all()) for a in arrays)


def _any_nan(arrays: list[np.ndarray]) -> bool:
    return any(bool(np.isnan(a).any()) for a in arrays)


def _writes_infinity(attrs: Any) -> bool:
    """An infinite float attribute: the op puts the infinity there on purpose."""
    values = attrs[1::2] if isinstance(attrs, tuple | list) else ()
    return any(isinstance(v, float) and math.isinf(v) for v in values)


def _op_name(op_type: str) -> str:
    """The op type, or the Python name of a `tf.function` run as one op."""
    match = FUNCTION.match(op_type)
    return match.group(1) if match else op_type


def _tape_id(tensor: Any) -> int | None:
    value = getattr(tensor, "_id", None)
    return value if isinstance(value, int) else None


def _label(op: str, where: tuple[str, int] | None) -> dict[str, Any]:
    return {"op": op, "path": where[0] if where else None, "line": where[1] if where else None}


def _gradient_function_frame(frame: FrameType | None) -> FrameType | None:
    """`backprop._gradient_function`, which called the gradient function running this op."""
    for _ in range(MAX_FRAMES):
        if frame is None or os.path.realpath(frame.f_code.co_filename) == HERE:
            return None
        if frame.f_code.co_name == "_gradient_function" and "mock_op" in frame.f_locals:
            return frame
        frame = frame.f_back
    return None


class OpWatch:
    """The op callback of one replay. `mode` "forward": remember the first op that made a
    NaN/Inf. "record": remember every op's outputs with its label (the forward of a backward
    replay). "backward": remember the first gradient op that made a non-finite value from
    finite ones, with the label of the forward op it differentiates."""

    def __init__(self, root: str, mode: str = "forward") -> None:
        self.mode = mode
        # from a callback outwards, stopping at this module (the replay is never the user's line)
        self._frames = UserFrames(root, MAX_FRAMES, stop=HERE)
        self.found: dict[str, Any] | None = None
        self.culprit: tuple[str, dict[str, Any]] | None = None
        self._made_by: dict[int, dict[str, Any]] = {}  # output tape id -> label
        self._read_by: dict[tuple[str, tuple[int | None, ...]], dict[str, Any]] = {}

    def __call__(
        self,
        op_type: str,
        inputs: Any,
        attrs: Any,
        outputs: Any,
        op_name: Any = None,
        graph: Any = None,
    ) -> None:
        if graph is not None:  # an op created while tracing a tf.function: no values yet
            return None
        with suppress(Exception):  # looking must never change what the code does
            self._see(str(op_type), tuple(inputs or ()), attrs, tuple(outputs or ()))
        return None

    def _see(
        self, op_type: str, inputs: tuple[Any, ...], attrs: Any, outputs: tuple[Any, ...]
    ) -> None:
        if self.mode == "record":
            label = _label(_op_name(op_type), self._frames.find_from(sys._getframe(2)))
            for t in outputs:
                key = _tape_id(t)
                if key is not None:
                    self._made_by[key] = label
            self._read_by.setdefault((op_type, tuple(_tape_id(t) for t in inputs)), label)
            return
        done = self.found if self.mode == "forward" else self.culprit
        if done is not None or op_type in SOURCES or _writes_infinity(attrs):
            return
        before, after = _arrays(inputs), _arrays(outputs)
        if self.mode == "backward":
            if _finite(before) and not _finite(after):
                self.culprit = (op_type, self._forward_op(op_type, sys._getframe(2)))
        elif (not _any_nan(before) and _any_nan(after)) or (_finite(before) and not _finite(after)):
            where = self._frames.find_from(sys._getframe(2))
            self.found = {**_label(_op_name(op_type), where), "where": "forward"}

    def _forward_op(self, op_type: str, frame: FrameType | None) -> dict[str, Any]:
        """The label of the forward op whose gradient function ran this gradient op."""
        caller = _gradient_function_frame(frame)
        if caller is None:  # no forward op: a custom gradient, the tape's aggregation
            return _label(_op_name(op_type), self._frames.find_from(frame))
        forward = str(caller.f_locals.get("op_name"))
        mock = caller.f_locals.get("mock_op")
        for t in getattr(mock, "outputs", None) or ():
            label = self._made_by.get(_tape_id(t) or -1)
            if label is not None:
                return label
        read = tuple(_tape_id(t) for t in getattr(mock, "inputs", None) or ())
        label = self._read_by.get((forward, read)) if read else None
        return label if label is not None else _label(_op_name(forward), None)


@contextmanager
def watching(watch: OpWatch) -> Iterator[OpWatch]:
    from tensorflow.python.framework import op_callbacks

    op_callbacks.add_op_callback(watch)
    try:
        yield watch
    finally:
        op_callbacks.remove_op_callback(watch)


def _to_tf(inputs: Sequence[torch.Tensor]) -> list[Any]:
    import tensorflow as tf

    return [tf.constant(x.detach().cpu().numpy()) for x in inputs]


def _variables(entry: Entry) -> list[Any]:
    """The trainable variables of the Keras layer (or tf.Module) the entry calls: the layer
    itself, the layer of a bound method, a recorded layer's replay (`KerasReplay.layer`)."""
    owners = [entry.fn, getattr(entry.fn, "__self__", None), getattr(entry.fn, "layer", None)]
    seen: set[int] = set()
    variables = []
    for owner in owners:
        try:
            found = list(getattr(owner, "trainable_variables", None) or ())
        except Exception:  # a property of the PR's object may raise
            continue
        for v in found:
            if id(v) not in seen:
                seen.add(id(v))
                variables.append(v)
    return variables


def _variable_name(variable: Any) -> str:
    """Keras 3's `path` ("centred/proj"), else the TensorFlow name ("centred/proj:0")."""
    return str(
        getattr(variable, "path", None)
        or getattr(variable, "name", None)
        or f"<variable {list(getattr(variable, 'shape', []))}>"
    )


def _gradient_values(grad: Any) -> Any:
    return getattr(grad, "values", grad)  # IndexedSlices (a gather's gradient): its values


def _backward(entry: Entry, inputs: Sequence[torch.Tensor], repo: str) -> dict[str, Any] | None:
    import tensorflow as tf

    watch = OpWatch(repo, mode="record")
    tensors = _to_tf(inputs)
    watched = [t for t in tensors if t.dtype.is_floating]
    with watching(watch):
        with tf.GradientTape(persistent=True) as tape:
            for t in watched:
                tape.watch(t)
            try:
                out = entry.call(tensors)
            except Exception:  # the trigger may make the code raise: nothing more to say
                return None
            outputs = [
                o for o in tf.nest.flatten(out) if isinstance(o, tf.Tensor) and o.dtype.is_floating
            ]
            chosen = [o for o in outputs if _finite(_arrays([o]))] or outputs
            if not chosen:
                return None
            total = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float64)) for o in chosen])
        variables = _variables(entry)
        watch.mode = "backward"
        try:
            grads = tape.gradient(total, [*watched, *variables])
        except Exception:  # no gradient defined, a variable the tape cannot use
            return None
        finally:
            del tape
    if watch.culprit is None:
        return None
    node, label = watch.culprit
    names = input_names(entry, len(tensors))
    index = {id(t): i for i, t in enumerate(tensors)}
    bad_inputs = [
        names[index[id(t)]]
        for t, g in zip(watched, grads, strict=False)
        if g is not None and not _finite(_arrays([_gradient_values(g)]))
    ]
    bad_parameters = [
        _variable_name(v)
        for v, g in zip(variables, grads[len(watched) :], strict=True)
        if g is not None and not _finite(_arrays([_gradient_values(g)]))
    ]
    return {
        **label,
        "where": "backward",
        "node": node,
        "reaches_inputs": bool(bad_inputs),
        "inputs": bad_inputs[:MAX_NAMED],
        "reaches_parameters": bool(bad_parameters),
        "parameters": sorted(bad_parameters)[:MAX_NAMED],
    }


@contextmanager
def functions_run(eagerly: bool) -> Iterator[None]:
    """`tf.function`s run eagerly (or as compiled) for one replay, as they were after."""
    import tensorflow as tf

    before = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(eagerly)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(before)


def localise_tf(
    entry: Entry, inputs: Sequence[torch.Tensor], repo: str, where: str = "forward"
) -> dict[str, Any] | None:
    """`localise` for a TensorFlow entry: the same result, the same keys. Replayed with the
    `tf.function`s run eagerly, then (when that replay found nothing) as compiled."""
    found = None
    # a script run executes its tf.functions eagerly anyway (script_tf): one replay
    for eagerly in (True,) if entry.source == "script" else (True, False):
        with functions_run(eagerly):
            found = _replay(entry, inputs, repo, where)
        if found is not None:
            return found
    return found


def _replay(
    entry: Entry, inputs: Sequence[torch.Tensor], repo: str, where: str
) -> dict[str, Any] | None:
    try:
        tensors = _to_tf(inputs)
    except Exception:  # no TensorFlow, or an input it cannot take
        return None
    watch = OpWatch(repo)
    try:
        with watching(watch):
            entry.call(tensors)
    except Exception:  # the trigger may make the code raise: nothing more to say then
        return watch.found
    if watch.found is not None or where != "backward":
        return watch.found
    try:
        return _backward(entry, inputs, repo)
    except Exception:  # TensorFlow's own machinery failed on this code: no localisation
        return None
