"""TensorFlow 2 (eager) for the dynamic pass: watch an op at a source line, evaluate an entry.

TensorFlow has no dispatch mode like PyTorch's `TorchFunctionMode`, so the probe wraps the op's
public functions (every catalogue spelling: `tf.math.log`, `tf.log` of TF1 through
`tf.compat.v1`, `keras.ops.log`) and `tf.Tensor`'s operators for the time of one evaluation.
Inputs stay torch tensors in the searcher; they cross into TensorFlow here and gradients come
back, so every search stage serves both frameworks.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from analyzers.catalogue import CATALOGUE
from analyzers.dtypes import limits
from analyzers.dynamic.probe import LineWatch

if TYPE_CHECKING:
    from analyzers.dynamic.search import Evaluation, Searcher

OPERATORS = {"div": ("__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__"),
             "pow": ("__pow__",)}
REVERSED = frozenset({"__rtruediv__", "__rfloordiv__"})


@dataclass
class TFHit:
    operand: Any
    output: Any


@dataclass
class TFProbe:
    path: str
    lines: frozenset[int]
    op: str
    tape: Any = None
    hits: list[TFHit] = field(default_factory=list)
    _patched: list[tuple[Any, str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._watch = LineWatch(self.path, self.lines)

    def _wrap(self, original: Callable[..., Any], operand_at: int) -> Callable[..., Any]:
        import tensorflow as tf

        probe = self

        def watched(*args: Any, **kwargs: Any) -> Any:
            if not tf.executing_eagerly():  # Keras traces `call` once to build the layer
                return original(*args, **kwargs)
            on_line = probe._watch.caller_on_line()
            operand = args[operand_at] if on_line and operand_at < len(args) else None
            if operand is not None and probe.tape is not None and hasattr(operand, "dtype"):
                probe.tape.watch(operand)
            out = original(*args, **kwargs)
            if operand is not None:
                probe.hits.append(TFHit(operand, out))
            return out

        return watched

    def __enter__(self) -> TFProbe:
        import tensorflow as tf

        spec = CATALOGUE.by_op[self.op]
        for framework, qualname in spec.qualnames():
            if framework not in ("tensorflow", "keras"):
                continue
            for owner, attr in _owners(qualname):
                original = getattr(owner, attr)
                index = spec.operand_index(qualname)
                self._patched.append((owner, attr, original))
                setattr(owner, attr, self._wrap(original, index))
        for name in OPERATORS.get(self.op, ()):
            original = getattr(tf.Tensor, name)
            index = 0 if name in REVERSED or self.op == "pow" else 1
            self._patched.append((tf.Tensor, name, original))
            setattr(tf.Tensor, name, self._wrap(original, index))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, attr, original in reversed(self._patched):
            setattr(owner, attr, original)
        self._patched.clear()


def _owners(qualname: str) -> Iterator[tuple[Any, str]]:
    """Module objects holding this function: `tensorflow.log` lives in tf.compat.v1."""
    module_path, _, attr = qualname.rpartition(".")
    candidates = [module_path]
    if module_path == "tensorflow" or module_path.startswith("tensorflow."):
        rest = module_path[len("tensorflow"):]
        candidates.append("tensorflow.compat.v1" + rest)
    for path in candidates:
        owner = _resolve(path)
        if owner is not None and callable(getattr(owner, attr, None)):
            yield owner, attr


def _resolve(path: str) -> Any:
    parts = path.split(".")
    try:
        obj: Any = importlib.import_module(parts[0])
    except ImportError:
        return None
    for part in parts[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _finite(value: Any) -> bool:
    import tensorflow as tf

    if isinstance(value, tf.Tensor | tf.Variable):
        if not value.dtype.is_floating:
            return True
        return bool(tf.reduce_all(tf.math.is_finite(value)))
    if isinstance(value, tuple | list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def suspect_loss_tf(op: str, x: Any, dtype: str) -> Any:
    """The catalogue's suspect quantity in TensorFlow ops (see suspect.py for PyTorch)."""
    import tensorflow as tf

    spec = CATALOGUE.by_op[op]
    x = tf.cast(x, tf.float64)
    threshold = float(spec.thresholds.get(dtype, limits(dtype).exp_max))
    forms: dict[str, Callable[[Any], Any]] = {
        "x": lambda v: v,
        "abs(x)": tf.abs,
        "x + 1": lambda v: v + 1,
        "x - 1": lambda v: v - 1,
        "1 - abs(x)": lambda v: 1 - tf.abs(v),
        "min(x, 1 - x)": lambda v: tf.minimum(v, 1 - v),
        "threshold - x": lambda v: threshold - v,
        "threshold - abs(x)": lambda v: threshold - tf.abs(v),
        "distance to the nearest non-positive integer":
            lambda v: tf.where(v > 0, v, tf.abs(v - tf.round(v))),
    }
    form = forms.get(spec.suspect_loss)
    if form is None:
        return None
    return tf.reduce_min(form(x))


def evaluate_tf(searcher: Searcher, inputs: list[torch.Tensor],
                want_grad: bool) -> Evaluation:
    """One run of a TensorFlow entry under the probe, with the local-derivative check."""
    import tensorflow as tf

    from analyzers.dynamic.search import Evaluation

    probe: TFProbe = searcher.tf_probe
    probe.hits.clear()
    tensors = [tf.constant(x.detach().cpu().numpy()) for x in inputs]
    watched = [t for t in tensors if t.dtype.is_floating]
    with tf.GradientTape(persistent=True) as tape:
        for t in watched:
            tape.watch(t)
        probe.tape = tape
        try:
            with probe:
                output = searcher.entry.call(tensors)
        except Exception as exc:  # the PR's code may raise on any input
            return Evaluation(error=f"{type(exc).__name__}: {exc}")
        finally:
            probe.tape = None
        losses = [suspect_loss_tf(searcher.op, h.operand, searcher.dtype) for h in probe.hits
                  if h.operand.dtype.is_floating and _finite(h.operand)]
        losses = [v for v in losses if v is not None]
        loss = tf.reduce_min(tf.stack(losses)) if losses else None
        finite_outputs = [o for o in tf.nest.flatten(output)
                          if isinstance(o, tf.Tensor) and o.dtype.is_floating and _finite(o)]
        total = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float64)) for o in finite_outputs]) \
            if finite_outputs else None
    if not probe.hits:
        return Evaluation()
    result = Evaluation(reached=True)
    for hit in probe.hits:
        if _finite(hit.operand) and not _finite(hit.output):
            result.forward = True
        elif not result.forward and hit.operand.dtype.is_floating:
            local = tape.gradient(hit.output, hit.operand)
            if local is not None and not _finite(local):
                result.backward = True
    if loss is not None:
        result.loss = float(loss.numpy())
        if want_grad and watched:
            grads = tape.gradient(loss, watched)
            result.grads = [None if g is None else torch.from_numpy(np.array(g.numpy()))
                            for g in grads]
    if result.forward:
        result.reaches_output = not _finite(output)
    elif result.backward and watched and total is not None:
        grads = tape.gradient(total, watched)
        result.reaches_output = not all(g is None or _finite(g) for g in grads)
    del tape
    return result
