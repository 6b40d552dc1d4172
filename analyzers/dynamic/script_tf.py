"""Script mode for TensorFlow 2: the same driver as `script.py`, TensorFlow's external values.

TensorFlow has no dispatch mode, so `TFExternalValues` patches for the time of one run:

* `tf.random`'s float draws (`normal`, `uniform`, `truncated_normal`, ...), kept when the
  caller is the repository's own code (Keras's initialisers and dropout follow the seed);
* the batches a `tf.data` iterator yields, keyed at the nearest repository frame, tensor by
  tensor inside tuples and dicts (`callsites.CallSites`): `OwnedIterator.__next__` (a `for x, y
  in dataset` loop), `get_next` (Keras's `fit`, `evaluate` and `predict`: their train step
  asks the iterator itself, and runs eagerly here, so a `model.fit(...)` line is the batches'
  call site) and `get_next_as_optional` (Keras with `steps_per_execution` > 1); numpy's
  draws. Not intercepted: a `tf.distribute` strategy's own per-replica iterators;
* the flagged op's functions (every spelling the catalogue knows, `watch_functions`): a call
  from the watched lines is a hit, with the op's local derivative when the reproducer checks
  the backward pass.

The run stops once the op has run: at the next external value, the next call of the op off
its lines, or the next TensorFlow op executed off them (an eager op callback, which is how
`tf.debugging.enable_check_numerics` sees every op). `tf.function`s run eagerly meanwhile
(`tf.config.run_functions_eagerly`), so a compiled train step is seen op by op.

A precision search runs the whole script under Keras's global `mixed_float16` or
`mixed_bfloat16` policy (`mixed_policy`), as PyTorch scripts run under autocast.

Values cross as tf tensors: the searcher's torch inputs become watched tf constants in
`tf_backend.evaluate_tf`, and a substitute keeps the gradient back to them. Runs only inside
the sandboxed harness; the reproducer carries a copy of the runtime (`writer.runtime_lines`
reads it from this file).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from typing import Any

from analyzers.dynamic.callsites import CallSites, StopScript

# tf.random's functions that return float draws (integer draws, shuffles and categorical
# indices are not values a NaN is searched in)
TF_RANDOM_DRAWS = (
    "normal",
    "uniform",
    "truncated_normal",
    "gamma",
    "stateless_normal",
    "stateless_uniform",
    "stateless_truncated_normal",
    "stateless_gamma",
)


class TFExternalValues(CallSites):
    """Intercepts TensorFlow's external values at their call sites and watches one op (its
    functions, `watched`: (owner's dotted path, attribute) pairs) on given lines."""

    def __init__(
        self,
        root: str,
        watch_path: str,
        watch_lines: Any,
        watched: Any,
        on_value: Any,
        check_gradient: bool = False,
    ) -> None:
        CallSites.__init__(self, root, watch_path, watch_lines, on_value)
        self.watched = [tuple(w) for w in watched]
        self.check_gradient = check_gradient  # hits carry the op's local derivative
        self._busy = False  # inside our own bookkeeping: the op callback looks away
        self._eager: Any = None

    @staticmethod
    def _tensor(value: Any) -> bool:
        return hasattr(value, "numpy") and hasattr(value, "dtype") and hasattr(value, "shape")

    def _put(self, natural: Any, value: Any) -> Any:
        import tensorflow as tf

        if (
            value is natural
            or not self._tensor(value)
            or tuple(value.shape) != tuple(natural.shape)
        ):
            return natural
        return tf.cast(value, natural.dtype)  # the same tensor (and gradient) when it agrees

    def _value(self, label: str, natural: Any) -> Any:
        if not self._tensor(natural) or not natural.dtype.is_floating:
            return natural
        return self._put(natural, self.on_value(label, natural))

    def _leaf(self, label: str, value: Any) -> Any:
        """One tensor of a batch, substituted; None for what is not a tensor."""
        return self._value(label, value) if self._tensor(value) else None

    def _array(self, label: str, natural: Any) -> Any:
        """A numpy draw: searched as a tf tensor, handed back as numpy (or a float)."""
        import numpy
        import tensorflow as tf

        array = numpy.asarray(natural)
        if array.dtype.kind != "f":
            return natural
        tensor = tf.constant(array)
        value = self.on_value(label, tensor)
        if value is tensor or not self._tensor(value) or tuple(value.shape) != array.shape:
            return natural
        out = numpy.asarray(value.numpy()).astype(array.dtype)
        return out if isinstance(natural, numpy.ndarray) else out.item()

    def _draw(self, draw: Any) -> Any:
        mode = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            mode._expire()
            if mode._done():
                raise StopScript()
            natural = draw(*args, **kwargs)
            site = mode._site(sys._getframe(1), walk=False)
            if site is None:
                return natural
            return mode._value(mode._label("random", site), natural)

        return wrapper

    @staticmethod
    def _in_optional(optional: Any, put: Any) -> Any:
        """`get_next_as_optional`: the batch inside the Optional is the external value."""
        import tensorflow as tf

        if not tf.executing_eagerly() or not bool(optional.has_value()):
            return optional
        return tf.experimental.Optional.from_value(put(optional.get_value()))

    def _watch(self, original: Any, name: str) -> Any:
        mode = self

        def watched(*args: Any, **kwargs: Any) -> Any:
            import tensorflow as tf

            on_line = mode._on_watched_line(sys._getframe(1))
            if not on_line:
                mode._off_line()
                if mode._done():
                    raise StopScript()
            if not on_line or not tf.executing_eagerly():
                return original(*args, **kwargs)
            mode._busy = True
            try:
                floats = [
                    a for a in (*args, *kwargs.values()) if mode._tensor(a) and a.dtype.is_floating
                ]
                grads = None
                if mode.check_gradient and floats:
                    with tf.GradientTape(persistent=True) as tape:
                        for t in floats:
                            tape.watch(t)
                        out = original(*args, **kwargs)
                    grads = [tape.gradient(out, t) for t in floats]
                else:
                    out = original(*args, **kwargs)
                mode.hits.append((out, grads, name))
                mode._on_line(out)
            finally:
                mode._busy = False
            mode.ran = True
            return out

        return watched

    def _stop_after(
        self,
        op_type: Any,
        inputs: Any,
        attrs: Any,
        outputs: Any,
        op_name: Any = None,
        graph: Any = None,
    ) -> Any:
        """An eager op callback: an op on the watched lines gives the line's value; the first
        op off them after the watched op ran ends the run."""
        if graph is not None or self._busy:
            return None
        self._expire()
        if self._on_watched_line(sys._getframe(1)):
            self._on_line(outputs[0] if len(outputs) == 1 else tuple(outputs))
            return None
        self._off_line()
        if self._done():
            raise StopScript()
        return None

    @staticmethod
    def _lookup(path: str) -> Any:
        try:
            return importlib.import_module(path)
        except ImportError:
            parent, _, attr = path.rpartition(".")
            return getattr(importlib.import_module(parent), attr)

    def __enter__(self) -> Any:
        import tensorflow as tf
        from tensorflow.python.data.ops import iterator_ops
        from tensorflow.python.framework import op_callbacks

        for name in TF_RANDOM_DRAWS:
            draw = getattr(tf.random, name, None)
            if callable(draw):
                self._restore.append((tf.random, name, draw))
                setattr(tf.random, name, self._draw(draw))
        base = iterator_ops.OwnedIterator
        for name in ("__next__", "get_next"):
            self._restore.append((base, name, getattr(base, name)))
            setattr(base, name, self._next(getattr(base, name)))
        self._restore.append((base, "get_next_as_optional", base.get_next_as_optional))
        base.get_next_as_optional = self._next(base.get_next_as_optional, self._in_optional)
        for owner_path, attr in self.watched:
            owner = self._lookup(owner_path)
            original = getattr(owner, attr)
            self._restore.append((owner, attr, original))
            setattr(owner, attr, self._watch(original, attr))
        self._patch_numpy()
        self._eager = tf.config.functions_run_eagerly()
        tf.config.run_functions_eagerly(True)
        op_callbacks.add_op_callback(self._stop_after)
        CallSites.active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        import tensorflow as tf
        from tensorflow.python.framework import op_callbacks

        CallSites.active.remove(self)
        op_callbacks.remove_op_callback(self._stop_after)
        tf.config.run_functions_eagerly(bool(self._eager))
        self._unpatch()


@contextlib.contextmanager
def mixed_policy(dtype: str) -> Iterator[None]:
    """A script's whole run under Keras's global `mixed_<dtype>` policy, as a repository that
    trains in mixed precision sets it: the layers the script makes compute in `dtype` and keep
    float32 weights (`model.compile` then wraps the optimizer in a loss-scale optimizer). The
    policy that was in force comes back afterwards, whatever the run did to it."""
    import tensorflow as tf

    policies = tf.keras.mixed_precision
    previous = policies.global_policy()
    policies.set_global_policy(f"mixed_{dtype}")
    try:
        yield
    finally:
        policies.set_global_policy(previous)


def watch_functions(op: str) -> list[tuple[str, str]]:
    """The op's TensorFlow functions as (owner's dotted path, attribute): every catalogue
    spelling, where the framework itself looks each up (`math_ops.sqrt` for `tf.norm`), and
    `tf.Tensor`'s operators for div and pow (as `tf_backend.TFProbe` patches them)."""
    import tensorflow as tf  # noqa: F401 (the owners below are its modules)

    from analyzers.catalogue import CATALOGUE
    from analyzers.dynamic.owners import OPERATORS, owners

    spec = CATALOGUE.by_op[op]
    found: dict[tuple[int, str], tuple[str, str]] = {}
    for framework, qualname in spec.qualnames():
        if framework not in ("tensorflow", "keras"):
            continue
        for owner, attr in owners(qualname):
            path = getattr(owner, "__name__", None)
            if path and sys.modules.get(path) is owner:
                found.setdefault((id(owner), attr), (path, attr))
    watched = list(found.values())
    watched += [("tensorflow.Tensor", name) for name in OPERATORS.get(op, ())]
    return watched
