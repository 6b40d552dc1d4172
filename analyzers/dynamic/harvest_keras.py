"""Recorded TensorFlow calls: functions given tf tensors and methods of Keras layers.

The harvest (`harvest.py`) keeps every recorded tensor as a torch tensor (the searcher's
currency); a call is marked `tensorflow` when its tensors came from TensorFlow, and crosses
back at each evaluation (`tf_backend.evaluate_tf`).

A Keras layer cannot be deep-copied (Keras copies through its serialisation registry, which
knows only registered classes), so a recorded method call keeps the live layer and a snapshot
of its variables taken at the call: every replay restores that snapshot first, so what the
tests did to the layer afterwards (more training steps) and what one evaluation does to it
(BatchNormalization's moving statistics) never leak into the next. A standalone reproducer
rebuilds the layer from its recorded constructor call, builds it from its build config and
sets the recorded variables; that rebuild is checked here, as for `nn.Module`s, and when it
does not answer the recorded call the same way, `KerasScript.reason` says so.

Runs only inside the sandboxed harness: it touches the PR's objects.
"""

from __future__ import annotations

import base64
import copy
import io
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from analyzers.dynamic.encoding import encode_keywords, encode_value
from analyzers.dynamic.tensors import same_answers, to_tf
from analyzers.dynamic.writer import arguments, spell_value, weights_literal

WEIGHTS_LIMIT = 48 * 1024  # bytes of np.savez output a reproducer may embed (base64: 4/3 more)
LITERAL_LIMIT = 64  # variables of at most this many values in all are written out as numbers


def is_tf_value(value: Any) -> bool:
    """A concrete TensorFlow tensor or variable (eager: it has values to record)."""
    module = type(value).__module__
    return (
        module.startswith(("tensorflow", "keras"))
        and hasattr(value, "numpy")
        and hasattr(value, "dtype")
        and hasattr(value, "shape")
    )


def is_symbolic(value: Any) -> bool:
    """A tensor being traced (a Keras functional model, a tf.function): no values yet."""
    if "tensorflow" not in sys.modules:
        return False
    tf = sys.modules["tensorflow"]
    return (isinstance(value, tf.Tensor) and not hasattr(value, "numpy")) or type(
        value
    ).__name__ == "KerasTensor"


def to_torch(value: Any) -> torch.Tensor:
    """A tf tensor's values as a torch tensor of the same dtype (bfloat16 through float32:
    numpy has no bfloat16 of its own)."""
    dtype_name = getattr(value.dtype, "name", str(value.dtype))
    if dtype_name == "bfloat16":
        tf = sys.modules["tensorflow"]
        return torch.from_numpy(np.array(tf.cast(value, tf.float32).numpy())).to(torch.bfloat16)
    return torch.from_numpy(np.array(value.numpy()))


def layer_classes() -> tuple[type, ...]:
    """The Keras layer base classes loaded in this process (Keras 3, tf.keras, tf_keras)."""
    found: list[type] = []
    for name in ("keras", "tf_keras"):
        module = sys.modules.get(name)
        layers = getattr(module, "layers", None) if module else None
        base = getattr(layers, "Layer", None)
        if isinstance(base, type):
            found.append(base)
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        try:
            base = tf.keras.layers.Layer
        except Exception:  # tf.keras may be unresolvable (no keras package installed)
            base = None
        if isinstance(base, type):
            found.append(base)
    return tuple(dict.fromkeys(found))


def is_layer(obj: Any) -> bool:
    classes = layer_classes()
    if not classes:
        return False
    return issubclass(obj, classes) if isinstance(obj, type) else isinstance(obj, classes)


@dataclass
class KerasOwner:
    """A recorded method call's layer: the live object and its variables at the call."""

    layer: Any
    weights: list[np.ndarray]

    @classmethod
    def at_call(cls, layer: Any) -> KerasOwner:
        return cls(layer, [np.array(w) for w in layer.get_weights()])


class KerasReplay:
    """Calls the method on the recorded layer with its variables restored to the recording:
    every evaluation starts from the same layer."""

    def __init__(self, owner: KerasOwner, method: str, init: Any = None) -> None:
        self.owner = owner
        self.method = method
        self.init = init  # harvest.Construction: how the layer was built, when recorded

    @property
    def layer(self) -> Any:
        return self.owner.layer

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.layer.set_weights(self.owner.weights)
        return getattr(self.layer, self.method)(*args, **kwargs)

    def rebound(self, cls: type) -> KerasReplay:
        """The same recorded call on a layer of `cls` (a patched copy of the class, in the
        fix stage) built with the recorded arguments and holding the recorded variables."""
        if self.init is None:
            raise TypeError(
                f"the call that built the {type(self.layer).__qualname__} was not "
                "recorded: a patched layer cannot be built like it"
            )
        layer = cls(*copy.deepcopy(self.init.args), **copy.deepcopy(self.init.kwargs))
        config = self.layer.get_build_config()
        if config:
            layer.build_from_config(config)
        layer.set_weights(self.owner.weights)
        return KerasReplay(KerasOwner(layer, self.owner.weights), self.method, self.init)


@dataclass
class KerasScript:
    """How a standalone script rebuilds the recorded layer, or (`reason`) why it cannot.

    `plan()` is the reproducer plan's `rebuild` (writer._keras_lines writes it after the
    seed and before the call)."""

    class_path: str = ""
    args: list[Any] = field(default_factory=list)  # encoded (encoding.encode_value)
    kwargs: list[list[Any]] = field(default_factory=list)
    build_config: Any = None  # the layer's get_build_config(), encoded
    weights: list[dict[str, Any]] | None = None  # every variable's values, when small
    state: str = ""  # else base64 of np.savez output (writer.state_lines embeds it)
    reason: str | None = None

    def plan(self) -> dict[str, Any]:
        return {
            "class_path": self.class_path,
            "args": self.args,
            "kwargs": self.kwargs,
            "build_config": self.build_config,
            "weights": self.weights,
            "state": self.state,
        }


def weights_data(weights: list[np.ndarray]) -> list[dict[str, Any]]:
    """Small variables as plan data: values exact (float64), with their dtype."""
    return [
        {
            "dtype": w.dtype.name,
            "values": (w.astype(np.float64) if w.dtype.kind == "f" else w).tolist(),
        }
        for w in weights
    ]


def plan_script(
    key: str,
    owner: KerasOwner,
    method: str,
    init: Any,
    call_args: tuple[Any, ...],
    call_kwargs: dict[str, Any],
) -> KerasScript:
    """Write the rebuild down and run it exactly as the script will: a fresh layer from the
    recorded constructor call, built from its build config, holding the recorded variables,
    must answer the recorded call with the recorded layer's outputs."""
    module_name, _, qualname = key.partition(":")
    class_path = qualname.rpartition(".")[0]
    kind = type(owner.layer)
    if kind.__module__ != module_name or kind.__qualname__ != class_path:
        return KerasScript(
            reason=f"the tests called {qualname} on a {kind.__module__}."
            f"{kind.__qualname__}, a subclass whose constructor call is "
            "not recorded"
        )
    if init is None:
        return KerasScript(
            reason=f"the call that built the {class_path} was not recorded "
            "(it was built before the harvest, or copied)"
        )
    try:
        args = [encode_value(a) for a in init.args]
        kwargs = encode_keywords(init.kwargs)
    except ValueError as exc:
        return KerasScript(
            reason=f"an argument of the {class_path} constructor is {exc}, "
            "which a script cannot spell"
        )
    init_source = arguments({"args": args, "kwargs": kwargs}, "the constructor")  # messages
    plan = KerasScript(class_path, args, kwargs)
    try:
        config = owner.layer.get_build_config()
        plan.build_config = encode_value(config) if config else None
    except ValueError as exc:
        return KerasScript(
            reason=f"the build config of the {class_path} holds {exc}, which a script cannot spell"
        )
    try:
        _embed(plan, owner.weights)
        rebuilt = _rebuild(kind, init, plan)
    except ValueError as exc:
        return KerasScript(reason=str(exc))
    except Exception as exc:  # the PR's layer may fail to build or load in any way
        return KerasScript(
            reason=f"rebuilding {class_path}({init_source}) outside the tests "
            f"failed: {type(exc).__name__}: {exc}"
        )
    replay = KerasReplay(owner, method, init)
    fresh = KerasReplay(KerasOwner.at_call(rebuilt), method, init)
    if not _same_answer(replay, fresh, call_args, call_kwargs):
        return KerasScript(
            reason=f"{class_path}({init_source}) with the recorded variables "
            "set does not answer the recorded call like the layer the "
            "tests built (it keeps state outside its variables)"
        )
    return plan


def _embed(plan: KerasScript, weights: list[np.ndarray]) -> None:
    if sum(w.size for w in weights) <= LITERAL_LIMIT:
        plan.weights = weights_data(weights)
        return
    buffer = io.BytesIO()
    np.savez(buffer, *weights)
    size = buffer.getbuffer().nbytes
    if size > WEIGHTS_LIMIT:
        raise ValueError(
            f"the recorded {plan.class_path} holds {len(weights)} variables "
            f"({size / 1024:.0f} KiB saved), more than the "
            f"{WEIGHTS_LIMIT // 1024} KiB a reproducer embeds"
        )
    plan.state = base64.b64encode(buffer.getvalue()).decode("ascii")


def _rebuild(kind: type, init: Any, plan: KerasScript) -> Any:
    """The layer as the script builds it, from the very source the script holds."""
    layer = kind(*init.args, **init.kwargs)
    if plan.build_config is not None:  # noqa: S307 below - our own spelling
        layer.build_from_config(eval(spell_value(plan.build_config)))  # noqa: S307
    if plan.weights is not None:
        weights = eval(weights_literal(plan.weights), {"np": np})  # noqa: S307
    else:
        saved = np.load(io.BytesIO(base64.b64decode(plan.state)))
        weights = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    layer.set_weights(weights)
    return layer


def _same_answer(
    recorded: KerasReplay, rebuilt: KerasReplay, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> bool:
    def answer(replay: KerasReplay) -> list[np.ndarray]:
        import tensorflow as tf

        out = replay(*[to_tf(a) for a in args], **{k: to_tf(v) for k, v in kwargs.items()})
        return [np.array(t) for t in tf.nest.flatten(out) if hasattr(t, "numpy")]

    return same_answers(
        answer,
        recorded,
        rebuilt,
        lambda a, b: a.shape == b.shape and np.array_equal(a, b, equal_nan=True),
    )
