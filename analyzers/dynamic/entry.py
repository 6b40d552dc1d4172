"""The entry: how the search calls the PR's code (a function, a module, a method, a recorded
call), with which inputs' boxes, in which framework, dtype and device.

`entries.py` builds entries (configured, synthesised); the search, the localisers, the
reproducer and harvest use them; this module imports none of those. Runs inside the sandboxed
harness: an entry holds the PR's callable.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import torch

from analyzers.dynamic.lists import filled
from analyzers.dynamic.specs import InputSpec, widened
from analyzers.dynamic.tensors import TORCH_DTYPES, copied, to_tf, writes_into_leaf

EntrySource = Literal["config", "harvested", "synthesised", "script"]


@dataclass
class Entry:
    target: str
    specs: list[InputSpec]
    fn: Callable[..., Any]
    source: EntrySource
    constants: dict[str, Any] = field(default_factory=dict)  # keyword args not searched
    # of those, the ones numcheck chose (a parameter without a default): the reproducer
    # passes them by keyword
    passed: dict[str, Any] = field(default_factory=dict)
    init: dict[str, Any] = field(default_factory=dict)
    is_method: bool = False
    framework: str = "torch"
    param_names: list[str] = field(default_factory=list)
    dtype: str = "float32"  # the float dtype the entry runs in (float16: the fp16 bugs)
    start: list[torch.Tensor] | None = None  # a known-good input to start the search from
    # harvested calls: positional arguments with None where a searched input goes (and a
    # lists.SearchedList where a list of them goes)
    template: list[Any] | None = None
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    autocast: str | None = None
    device: str = "cpu"  # where the code runs; the search samples on CPU and moves inputs
    # configured weight ranges: the module's parameters that the last inputs replace
    weights: tuple[str, ...] = ()
    # how the module was loaded (loading.py): import | package-stubs | extracted, and why
    # the plain import failed; the reproducer loads it the same way
    loading: str = "import"
    loading_why: str = ""
    stand_ins: tuple[str, ...] = ()  # modules it was loaded with stand-ins for (standins.py)
    script_dirs: tuple[str, ...] = ()  # checkout folders appended to sys.path (siblings.py)
    moved: tuple[str, ...] = ()  # framework names bound to where they moved (moved.py)
    # the code writes into its inputs in place (PyG's `adj[:, idx, idx] = 1`), which autograd
    # refuses on a leaf that requires grad: each call gets copies (as the reproducer passes
    # `adj.clone()`), so the gradient still reaches the searched leaves
    copies_inputs: bool = False
    # a precision finding (precision.py): the reproducer first runs the call in float32 and
    # asserts it finite, then in the entry's own precision
    float32_reference: bool = False

    def differentiable_outputs(self, output: Any) -> Any:
        """What to differentiate after `call` returned `output`, for the fix stage's gradient
        check: the output itself, here."""
        return output

    def call(self, inputs: Sequence[torch.Tensor]) -> Any:
        if self.device == "cpu":
            return self._autocast(inputs)
        # differentiable moves: gradients reach the CPU leaves; and the code's own
        # `torch.arange(n)` / `torch.tensor(...)` land on the device, as on a GPU run
        with torch.device(self.device):
            return self._autocast([x.to(self.device) for x in inputs])

    def _autocast(self, inputs: Sequence[torch.Tensor]) -> Any:
        if self.copies_inputs:
            return self._in_context([copied(x) for x in inputs])
        try:
            return self._in_context(inputs)
        except RuntimeError as exc:
            if not writes_into_leaf(exc) or self.framework != "torch":
                raise
        self.copies_inputs = True  # from now on, and in the reproducer
        return self._in_context([copied(x) for x in inputs])

    def _in_context(self, inputs: Sequence[torch.Tensor]) -> Any:
        if self.autocast is not None and self.framework == "torch":
            with torch.autocast(device_type(self.device), dtype=TORCH_DTYPES[self.autocast]):
                return self._call(inputs)
        if self.autocast is not None and self.source == "script":  # a TensorFlow script
            from analyzers.dynamic.script_tf import mixed_policy

            with mixed_policy(self.autocast):
                return self._call(inputs)
        if self.framework == "tensorflow" and self.source != "script" and tf_keras_chosen():
            with code_as_written():
                return self._call(inputs)
        return self._call(inputs)  # a Keras layer under autocast has its policy built in

    def call_arrays(self, arrays: Sequence[Any]) -> Any:
        """A JAX or NumPy entry's call with the inputs already arrays of that framework
        (jax_backend.py, numpy_backend.py)."""
        if self.template is not None:
            return self.fn(*filled(self.template, arrays, self._replayed), **self.template_kwargs)
        return self.fn(*arrays, **self.constants)

    def _call(self, inputs: Sequence[torch.Tensor]) -> Any:
        if self.framework == "jax":  # torch tensors cross into JAX at the call
            from analyzers.dynamic.jax_backend import to_jax

            return self.call_arrays([to_jax(x) for x in inputs])
        if self.framework == "numpy":
            from analyzers.dynamic.numpy_backend import to_numpy

            return self.call_arrays([to_numpy(x) for x in inputs])
        if self.weights:
            return call_with_weights(self.fn, self.weights, inputs, self.constants)
        if self.template is not None:
            return self.fn(*filled(self.template, inputs, self._replayed), **self.template_kwargs)
        return self.fn(*inputs, **self.constants)

    def _replayed(self, value: Any) -> Any:
        """A recorded argument as the code got it: a recorded tf or jax array is kept as a
        torch tensor (as every input is) and crosses back to its framework here."""
        if self.framework == "tensorflow" and isinstance(value, torch.Tensor):
            return to_tf(value)
        if self.framework == "jax" and isinstance(value, torch.Tensor):
            from analyzers.dynamic.jax_backend import to_jax

            return to_jax(value)
        if type(value) in (list, dict):  # the code may write into it: each call its own copy
            return copy.deepcopy(value)
        return value

    def parameters(self) -> list[torch.Tensor]:
        """The trainable float parameters of the module the entry calls (an nn.Module, a
        method of one, or a recorded module's replay: the copy its last call ran on): a NaN
        that reaches only their gradient still breaks training."""
        owner = (
            self.fn
            if isinstance(self.fn, torch.nn.Module)
            else getattr(self.fn, "__self__", None) or getattr(self.fn, "last_module", None)
        )
        if not isinstance(owner, torch.nn.Module):
            return []
        return [p for p in owner.parameters() if p.requires_grad and p.is_floating_point()]

    def widened(self) -> Entry | None:
        """The same entry with every observed float input's box opened to the default box:
        the search's second stage, when the ranges the code was seen with hold no trigger
        (logits drawn in [0, 1] never reach the 104-wide gap that makes log(softmax) -inf).
        None when no input's box can widen."""
        specs = [widened(spec) or spec for spec in self.specs]
        if specs == list(self.specs):
            return None
        return replace(self, specs=specs)

    def in_dtype(self, dtype: str) -> Entry | None:
        """The same call computed in `dtype` (float32 for the precision differential, float64
        for the fix stage's reference): no autocast, a copy of the module cast to `dtype`, and
        float constants cast (TensorFlow: a Keras layer made again in `dtype` with the
        original's weights; a script run under autocast: the same run without it); the
        inputs are cast by `cast_inputs`. None where that cannot be done faithfully: JAX,
        NumPy, a device other than the CPU, a method of an object that is not a module, a
        script run in any other case."""
        import copy

        if self.device != "cpu":
            return None
        if self.source == "script":  # the script builds its own model, in float32
            return (
                replace(self, autocast=None, dtype=dtype)
                if self.autocast and dtype == "float32"
                else None
            )
        # what every twin shares: the dtype in its float inputs, no autocast, no start point
        twin = functools.partial(
            replace,
            self,
            dtype=dtype,
            autocast=None,
            specs=[replace(s, dtype=dtype) if s.is_float else s for s in self.specs],
            start=None,
            float32_reference=False,
        )
        if self.framework == "tensorflow":
            layer = _keras_twin(self.fn, self.init, self.specs, self.constants, dtype)
            return None if layer is None else twin(fn=layer)
        if self.framework != "torch":
            return None
        wanted = TORCH_DTYPES[dtype]

        def cast(value: Any) -> Any:
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                return value.detach().to(wanted)
            return value

        fn: Any = self.fn
        if isinstance(fn, torch.nn.Module):
            fn = copy.deepcopy(fn).to(wanted)
        elif self.is_method:
            owner = getattr(fn, "__self__", None)
            if not isinstance(owner, torch.nn.Module):
                return None
            fn = getattr(copy.deepcopy(owner).to(wanted), getattr(fn, "__name__", ""))
        elif not callable(fn) or not hasattr(fn, "__code__"):
            return None
        return twin(
            fn=fn,
            constants={k: cast(v) for k, v in self.constants.items()},
            template=None if self.template is None else [cast(v) for v in self.template],
            template_kwargs={k: cast(v) for k, v in self.template_kwargs.items()},
        )

    def has_mixed_precision(self) -> bool:
        """Can `under_autocast` make a twin? (Cheap: it makes none.)"""
        if self.dtype != "float32" or self.autocast is not None:
            return False
        if self.framework == "torch" or (
            self.framework == "tensorflow" and self.source == "script"
        ):
            return True
        if self.framework != "tensorflow":
            return False
        import tensorflow as tf

        return isinstance(self.fn, tf.keras.layers.Layer) and bool(self.fn.built)

    def under_autocast(self, dtype: str) -> Entry | None:
        """The same float32 call in mixed precision: under `torch.autocast` in `dtype`, or a
        Keras layer made again under the `mixed_<dtype>` policy with the original's weights
        (a PyTorch script: its whole run under autocast; a TensorFlow script: its whole run
        under Keras's global `mixed_<dtype>` policy); the model keeps float32 weights either
        way, as mixed-precision training does. None for an entry that already runs in
        another precision, a TensorFlow function (no policy applies to it), JAX or NumPy."""
        if not self.has_mixed_precision():  # the one statement of which entries have a twin
            return None
        if self.framework == "tensorflow" and self.source != "script":  # a built Keras layer
            policy = f"mixed_{dtype}"
            twin = _keras_twin(self.fn, self.init, self.specs, self.constants, policy)
            if twin is None:
                return None
            return replace(
                self,
                fn=twin,
                init={**self.init, "dtype": policy},
                dtype=dtype,
                autocast=dtype,
                start=None,
            )
        return replace(self, autocast=dtype, dtype=dtype)

    def describe_box(self) -> list[dict[str, Any]]:
        boxes = [spec.to_json() for spec in self.specs]
        for box, name in zip(boxes[len(boxes) - len(self.weights) :], self.weights, strict=True):
            box["weight"] = name  # a configured weight range (weights.py)
        return boxes


def _keras_twin(
    fn: Any,
    init: Mapping[str, Any],
    specs: Sequence[InputSpec],
    constants: Mapping[str, Any],
    dtype: str,
) -> Any:
    """A TensorFlow callable computing in `dtype` (or under a `mixed_...` policy): a plain
    function as it is (its inputs are cast), a Keras layer made again with `dtype=` and the
    original's weights; None for a layer not built yet or one that cannot be made so."""
    import tensorflow as tf

    if not isinstance(fn, tf.keras.layers.Layer):
        return fn if callable(fn) and hasattr(fn, "__code__") else None
    if not fn.built:
        return None
    given = "float32" if dtype.startswith("mixed_") else dtype  # a policy takes float32 in
    try:  # the PR's constructor and build may fail in any way
        twin = type(fn)(**{**init, "dtype": dtype})
        twin(
            *[tf.zeros(spec.shape, given if spec.is_float else spec.dtype) for spec in specs],
            **constants,
        )
        twin.set_weights(fn.get_weights())
    except Exception:
        return None
    return twin


def cast_inputs(inputs: Sequence[torch.Tensor], dtype: str) -> list[torch.Tensor]:
    """The float inputs in `dtype` (an `in_dtype` twin's inputs); others as they are."""
    wanted = TORCH_DTYPES[dtype]
    return [x.detach().to(wanted) if x.is_floating_point() else x for x in inputs]


def device_type(device: str) -> str:
    """`cuda:1` -> `cuda`: what torch.autocast wants."""
    return device.split(":", 1)[0]


def call_with_weights(
    module: Any, names: Sequence[str], inputs: Sequence[Any], kwargs: Mapping[str, Any]
) -> Any:
    """Run the module on the call's inputs with the trailing inputs as its named parameters,
    functionally: the module keeps its own values, gradients reach the inputs."""
    from torch.func import functional_call

    split = len(inputs) - len(names)
    values = dict(zip(names, inputs[split:], strict=True))
    return functional_call(module, values, tuple(inputs[:split]), dict(kwargs) or None)


def tf_keras_chosen() -> bool:
    """Whether `tf.keras` is Keras 2 (tf_keras) here: the harness chose it for code written
    for it (runners/keras_generation.py) before TensorFlow was imported."""
    return os.environ.get("TF_USE_LEGACY_KERAS") == "1"


@contextlib.contextmanager
def code_as_written() -> Iterator[None]:
    """Keras 2 code run as its source reads, line by line: AutoGraph off for the call. Keras 2
    converts a layer's `call` and a metric's `result` and `update_state` with AutoGraph on
    every call, even in eager mode, under the status of then, and the converted code runs
    from a generated file: the probe, which finds the flagged line in the stack
    (`LineWatch`), would never see it. Eagerly the conversion only replaces Python control
    flow with its TensorFlow equivalent, so the values are the same. A `tf.function` still
    converts its own body (its trace sets the status itself); Keras 3 converts nothing, so
    its code runs as before."""
    try:
        from tensorflow.python.autograph.core import ag_ctx
    except ImportError:  # a TensorFlow that has moved it: the code runs as TensorFlow chooses
        yield
        return
    with ag_ctx.ControlStatusCtx(status=ag_ctx.Status.DISABLED):
        yield
