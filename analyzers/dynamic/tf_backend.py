"""TensorFlow 2 (eager) for the dynamic pass: watch an op at a source line, evaluate an entry.

TensorFlow has no dispatch mode like PyTorch's `TorchFunctionMode`, so the probe wraps the op's
public functions (every catalogue spelling: `tf.math.log`, `tf.log` of TF1 through
`tf.compat.v1`, `keras.ops.log`) and `tf.Tensor`'s operators for the time of one evaluation.
Each function is also patched in the module that defines it (`math_ops.sqrt`), so a call the
framework makes for the user's line (`tf.norm` computes `math_ops.sqrt(reduce_sum(x * x))`) is
seen on that line too.
Inputs stay torch tensors in the searcher; they cross into TensorFlow here and gradients come
back, so every search stage serves both frameworks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from analyzers.catalogue import CATALOGUE
from analyzers.dtypes import limits
from analyzers.dynamic.evaluation import Evaluation, chunk_losses, keeps_rows
from analyzers.dynamic.owners import patch_op, restore
from analyzers.dynamic.probe import Hit, LineWatch
from analyzers.dynamic.raised import failed
from analyzers.dynamic.suspect import CallSite, call_site

if TYPE_CHECKING:
    from analyzers.dynamic.entry import Entry


@dataclass
class TFHit:
    operand: Any
    output: Any
    call: CallSite = field(default_factory=CallSite)

    @property
    def others(self) -> list[Any]:
        """The other float tensors the op reads (atan2's x)."""
        return [
            t
            for t in self.call.others
            if hasattr(t, "dtype") and getattr(t.dtype, "is_floating", False)
        ]


@dataclass
class TFProbe:
    path: str
    lines: frozenset[int]
    op: str
    tape: Any = None
    hits: list[TFHit] = field(default_factory=list)
    _patched: list[tuple[Any, str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.watch = LineWatch(self.path, self.lines)

    def _wrap(self, original: Callable[..., Any], operand_at: int, name: str) -> Callable[..., Any]:
        import tensorflow as tf

        probe = self

        def watched(*args: Any, **kwargs: Any) -> Any:
            if not tf.executing_eagerly():  # Keras traces `call` once to build the layer
                return original(*args, **kwargs)
            on_line = probe.watch.caller_on_line()
            operand = args[operand_at] if on_line and operand_at < len(args) else None
            call = call_site(probe.op, name, args, kwargs, operand) if operand is not None else None
            if operand is not None and probe.tape is not None:
                for t in [operand, *(call.others if call else ())]:
                    if isinstance(t, tf.Tensor | tf.Variable):
                        probe.tape.watch(t)
            out = original(*args, **kwargs)
            if operand is not None:
                probe.hits.append(TFHit(operand, out, call or CallSite(name)))
            return out

        return watched

    def __enter__(self) -> TFProbe:
        import tensorflow as tf

        self._patched = patch_op(self.op, ("tensorflow", "keras"), tf.Tensor, self._wrap)
        return self

    def __exit__(self, *exc: object) -> None:
        restore(self._patched)


def _no_nan(value: Any) -> bool:
    """No NaN in a float tensor (an infinity is allowed: a mask's -inf)."""
    import tensorflow as tf

    if isinstance(value, tf.Tensor | tf.Variable) and value.dtype.is_floating:
        return not bool(tf.reduce_any(tf.math.is_nan(value)))
    return True


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


def suspect_loss_tf(op: str, x: Any, dtype: str, call: CallSite | None = None) -> Any:
    """The catalogue's suspect quantity in TensorFlow ops (see suspect.py for PyTorch)."""
    import tensorflow as tf

    spec = CATALOGUE.by_op[op]
    x = tf.cast(x, tf.float64)
    threshold = float(spec.thresholds.get(dtype, limits(dtype).exp_max))
    others = [
        tf.cast(o, tf.float64)
        for o in (call.others if call else ())
        if hasattr(o, "dtype") and getattr(o.dtype, "is_floating", False)
    ]
    forms: dict[str, Callable[[Any], Any]] = {
        "x": lambda v: v,
        "abs(x)": tf.abs,
        "x + 1": lambda v: v + 1,
        "x - 1": lambda v: v - 1,
        "1 - abs(x)": lambda v: 1 - tf.abs(v),
        "min(x, 1 - x)": lambda v: tf.minimum(v, 1 - v),
        "threshold - x": lambda v: threshold - v,
        "threshold - abs(x)": lambda v: threshold - tf.abs(v),
        "distance to the nearest non-positive integer": lambda v: tf.where(
            v > 0, v, tf.abs(v - tf.round(v))
        ),
        # atan2(y, x): both near the origin
        "abs(x) + abs(y)": lambda v: tf.abs(v) + (tf.abs(others[0]) if others else 0.0),
        "smallest gap between eigenvalues (or the smallest eigenvalue)": lambda v: _linalg_tf(
            v, call.func_name if call else "", dtype
        ),
    }
    form = forms.get(spec.suspect_loss)
    if form is None:
        return None
    value = form(x)
    return None if value is None else tf.reduce_min(value)


def _loss_or_none(op: str, hit: TFHit, dtype: str) -> Any:
    """The objective, or None where this call's shapes do not fit it: guidance is lost,
    never the search."""
    try:
        return suspect_loss_tf(op, hit.operand, dtype, hit.call)
    except Exception:  # TensorFlow raises its own errors for shapes (InvalidArgumentError)
        return None


def _linalg_tf(a: Any, name: str, dtype: str) -> Any:
    """suspect._linalg in TensorFlow: eigen/singular value gaps for eigh/svd, the smallest
    eigenvalue for cholesky, the smallest singular value for inv/logdet."""
    import tensorflow as tf

    if len(a.shape) < 2 or a.shape[-1] in (0, None):
        return None
    if a.shape[-2] != a.shape[-1] and not name.endswith("svd"):
        return None
    n = int(a.shape[-1])
    blur = n * limits(dtype).eps
    name = name.removeprefix("linalg_")
    if name in ("eigh", "eigvalsh", "svd", "cholesky"):
        if name == "svd":
            values = tf.sort(tf.linalg.svd(a, compute_uv=False), axis=-1)
        else:
            values = tf.linalg.eigvalsh(0.5 * (a + tf.linalg.matrix_transpose(a)))
        scale = tf.reduce_max(tf.abs(values), axis=-1, keepdims=True)
        if name == "cholesky":
            return values[..., :1] - blur * scale
        if n < 2:
            return scale + 1.0
        return values[..., 1:] - values[..., :-1] - blur * scale
    values = tf.linalg.svd(a, compute_uv=False)  # descending
    return values[..., -1:] - blur * values[..., :1]


def _to_torch(value: Any) -> Any:
    if hasattr(value, "numpy") and hasattr(value, "dtype"):
        array = np.array(value.numpy())
        if array.dtype.name == "bfloat16":  # ml_dtypes' bfloat16, which torch cannot take
            return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(array)
    return value


def _as_torch_hit(hit: TFHit) -> Hit:
    """The hit in torch tensors, for the per-restart losses of a batched run."""
    return Hit(
        hit.call.func_name,
        _to_torch(hit.operand),
        None,
        replace(hit.call, others=tuple(_to_torch(o) for o in hit.call.others)),
    )


def evaluate_tf(
    probe: TFProbe,
    entry: Entry,
    op: str,
    dtype: str,
    inputs: list[torch.Tensor],
    want_grad: bool,
    chunks: int = 1,
) -> Evaluation:
    """One run of a TensorFlow entry under the probe, with the local-derivative check."""
    import tensorflow as tf

    probe.hits.clear()
    tensors = [tf.constant(x.detach().cpu().numpy()) for x in inputs]
    watched = [t for t in tensors if t.dtype.is_floating]
    with tf.GradientTape(persistent=True) as tape:
        for t in watched:
            tape.watch(t)
        probe.tape = tape
        try:
            with probe:
                output = entry.call(tensors)
        except Exception as exc:  # the PR's code may raise on any input
            return failed(exc, probe.watch, op)
        finally:
            probe.tape = None
        usable = [
            h
            for h in probe.hits
            if h.operand.dtype.is_floating and _finite(h.operand) and _finite(h.others)
        ]
        losses = [_loss_or_none(op, h, dtype) for h in usable]
        losses = [v for v in losses if v is not None]
        loss = tf.reduce_min(tf.stack(losses)) if losses else None
        finite_outputs = [
            o
            for o in tf.nest.flatten(output)
            if isinstance(o, tf.Tensor) and o.dtype.is_floating and _finite(o)
        ]
        total = (
            tf.add_n([tf.reduce_sum(tf.cast(o, tf.float64)) for o in finite_outputs])
            if finite_outputs
            else None
        )
    kept = bool(inputs) and inputs[0].dim() >= 1 and keeps_rows(output, inputs[0].shape[0])
    if not probe.hits:
        return Evaluation(batch_kept=kept)
    result = Evaluation(reached=True, batch_kept=kept)
    for hit in probe.hits:
        # an already non-finite operand or other argument (a numerator made NaN on an earlier
        # line) means the NaN/Inf was made upstream, not by this op,
        # in either pass (a derivative read at a NaN operand is NaN whatever the op); softmax's
        # -inf entries are the mask itself, as in the torch search
        operand_ok = (
            _no_nan(hit.operand)
            if op == "softmax"
            else _finite(hit.operand) and _finite(hit.call.rest)  # `others` are in `rest`
        )
        if operand_ok and not _finite(hit.output):
            result.forward = True
        elif operand_ok and not result.forward and hit.operand.dtype.is_floating:
            local = tape.gradient(hit.output, [hit.operand, *hit.others])
            if any(g is not None and not _finite(g) for g in local):
                result.backward = True
    if chunks > 1:
        per_chunk = [math.inf] * chunks
        for hit in usable:
            for i, value in enumerate(chunk_losses(op, _as_torch_hit(hit), dtype, chunks)):
                per_chunk[i] = min(per_chunk[i], value)
        result.chunk_losses = per_chunk
    if loss is not None:
        result.loss = float(loss.numpy())
        if want_grad and watched:
            grads = tape.gradient(loss, watched)
            result.grads = [
                None if g is None else torch.from_numpy(np.array(g.numpy())) for g in grads
            ]
    if result.forward or result.backward:  # where the reproducer sees it (Evaluation.visible)
        if not _finite(output):
            result.visible = "output"
        elif watched and total is not None:
            grads = tape.gradient(total, watched)
            if not all(g is None or _finite(g) for g in grads):
                result.visible = "gradient"
        result.reaches_output = result.visible is not None
    del tape
    return result
