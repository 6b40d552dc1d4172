"""Entries: how the PR's code gets called, with which inputs, inside which box.

Configured entries (`[[tool.numcheck.entries]]`) win; otherwise a call is synthesised from the
enclosing function's signature (tensor annotations, jaxtyping shape strings, defaults) or,
for an `nn.Module` method, from the module's first layer. This code runs only inside the
sandboxed harness: it imports the PR's code.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from analyzers.dynamic.branches import branch_values, exponent_values
from analyzers.dynamic.entry import Entry, device_type
from analyzers.dynamic.factories import factory_call
from analyzers.dynamic.layout import module_of, on_sys_path, source_roots
from analyzers.dynamic.loading import load
from analyzers.dynamic.objects import object_inputs
from analyzers.dynamic.signatures import (
    DEFAULT_BATCH,
    DEFAULT_FEATURES,
    EntryError,
    constructor_args,
    operand_names,
    positional_names,
    signature_inputs,
)
from analyzers.dynamic.specs import (
    DEFAULT_SHAPE,
    InputSpec,
    SpecError,
    default_spec,
    parse_spec,
)
from analyzers.dynamic.tensors import TORCH_DTYPES
from analyzers.dynamic.usage import ParameterUses, parameter_uses
from analyzers.dynamic.weights import with_weights


@dataclass(frozen=True)
class EntryConfig:
    """One `[[tool.numcheck.entries]]` table."""

    target: str  # "package.module:qualname"
    inputs: tuple[str, ...]
    init: dict[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    autocast: str | None = None  # "float16" | "bfloat16": run under torch.autocast
    weights: str | dict[str, str] | None = None  # weight ranges: "in [lo, hi]" or by name


def resolve_device(requested: str) -> str:
    """`auto` is CUDA when this process can see a GPU, else CPU; asking for CUDA where there
    is none is an error rather than a silent fallback, so a timing is never mislabelled."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device_type(requested) == "cuda" and not torch.cuda.is_available():
        raise EntryError(f"device {requested!r} was asked for but torch sees no CUDA device")
    if device_type(requested) not in ("cpu", "cuda"):
        raise EntryError(f"unknown device {requested!r}; use auto, cpu or cuda")
    return requested


def _place(obj: Any, device: str) -> Any:
    """Move an nn.Module to the entry's device (other callables are left alone)."""
    if device != "cpu" and isinstance(obj, torch.nn.Module):
        return obj.to(device)
    return obj


def module_name_for(repo_dir: Path, path: str) -> str:
    """`pkg/sub/mod.py` -> `pkg.sub.mod`, and `src/pkg/mod.py` -> `pkg.mod` where `src` is a
    source root of the checkout (layout.py)."""
    return module_of(path, source_roots(repo_dir))


def import_module(repo_dir: Path, module: str) -> Any:
    on_sys_path(repo_dir)
    return importlib.import_module(module)


def resolve_attr(module: Any, qualname: str) -> Any:
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def build_configured(repo_dir: Path, config: EntryConfig, seed: int, device: str = "cpu") -> Entry:
    module_name, _, qualname = config.target.partition(":")
    if not qualname:
        raise EntryError(f"entry target {config.target!r} must be 'package.module:name'")
    try:
        module = import_module(repo_dir, module_name)
        obj = resolve_attr(module, qualname)
    except (ImportError, AttributeError) as exc:
        raise EntryError(f"cannot import entry {config.target}: {exc}") from exc
    try:
        specs = [parse_spec(text) for text in config.inputs]
    except SpecError as exc:
        raise EntryError(str(exc)) from exc
    if config.dtype:
        specs = [replace(s, dtype=config.dtype) if s.is_float else s for s in specs]
    framework = framework_of(obj)
    if framework == "tensorflow":
        device = "cpu"  # the TF path runs eagerly on the CPU build (tensorflow-cpu)
    if inspect.isclass(obj):
        torch.manual_seed(seed)
        _seed_tensorflow(framework, seed)
        instance: Any = obj(**config.init)
        if config.dtype and isinstance(instance, torch.nn.Module):
            instance = instance.to(TORCH_DTYPES[config.dtype])
        return with_weights(
            Entry(
                config.target,
                specs,
                _place(instance, device),
                "config",
                init=dict(config.init),
                framework=framework,
                param_names=_param_names(instance),
                dtype=config.autocast or config.dtype or "float32",
                autocast=config.autocast,
                device=device,
            ),
            config.weights,
            seed,
        )
    return with_weights(
        Entry(
            config.target,
            specs,
            obj,
            "config",
            framework=framework,
            param_names=_param_names(obj),
            dtype=config.autocast or config.dtype or "float32",
            autocast=config.autocast,
            device=device,
        ),
        config.weights,
        seed,
    )


# Shapes tried, in order, for tensor parameters that say nothing of their shape, when the
# default (batch, features) call never reaches the op (a function that asserts
# `(*, 3, H, W)` raises on it): a square matrix (an adjacency, a covariance: PyG's dense
# layers index `adj[:, i, i]` for every column i), an image batch, a sequence batch, a
# vector, and a scalar (an unannotated `height, width` that is a number: `x / (width - 1.0)`).
SHAPE_GUESSES: tuple[tuple[int, ...], ...] = ((8, 8), (2, 3, 8, 8), (2, 6, 16), (16,), ())
# An empty batch: no rows, the default features. Tried only where the static pass says the
# operand stays 0 when a loop does not run (runners/harness.empty_may_fail).
EMPTY_SHAPE = (0, DEFAULT_SHAPE[1])


_DIM = r"(?:\*|\.\.\.|\d+|[A-Za-z]\w{0,3})"
_SHAPE_IN_TEXT = (
    re.compile(rf"\(({_DIM}(?:\s*,\s*{_DIM}){{1,5}})\)"),  # (*, 3, H, W)
    re.compile(r"\b([A-Z\d*]{1,3}(?:x[A-Z\d*]{1,3}){1,5})(?![\w])"),
)  # BxCxHxW


def shape_from_message(text: str) -> tuple[int, ...] | None:
    """The shape a function's own error asks for (what it says before "Got"): `Input size
    must be a (*, 3, 3) tensor` -> (2, 3, 3); `(B, C, H, W)` and `BxCx*` -> (2, 3, 8, 8). A
    leading `*`/`...` is a batch of 2, a trailing one two dimensions of 8; a letter is 2 for a
    batch (B, N), 3 for channels (C), else 8."""
    wanted = re.split(r"\bgot\b", text, maxsplit=1, flags=re.IGNORECASE)[0]
    match = next((m for pattern in _SHAPE_IN_TEXT if (m := pattern.search(wanted))), None)
    if match is None:
        return None
    dims = [d for d in re.split(r"\s*[,x]\s*", match[1]) if d]
    sizes: list[int] = []
    for index, dim in enumerate(dims):
        if dim in ("*", "..."):
            sizes.extend([2] if index == 0 else [8, 8] if index == len(dims) - 1 else [])
        elif dim.isdigit():
            sizes.append(int(dim))
        else:
            sizes.append({"B": 2, "N": 2, "C": 3}.get(dim, 8))
    return tuple(sizes) if len(sizes) >= 2 and all(0 < n <= 64 for n in sizes) else None


# how many sizes read from one shape error are tried, and the largest
MISMATCH_SIZES = 2
LARGEST_MISMATCH_SIZE = 4096


def shapes_from_mismatch(
    text: str, tried: tuple[int, ...] = DEFAULT_SHAPE
) -> list[tuple[int, ...]]:
    """Shapes whose feature size is one a shape error names and the call did not pass: a
    module's weights fix its input width (`nn.Linear(784, 500)`, an RBM's `v.mv(v_bias)`), and
    torch says it (`size mismatch, got input (4), mat (4x8), vec (784)`, `mat1 and mat2 shapes
    cannot be multiplied (4x8 and 784x500)`), so the next call is (batch, 784)."""
    if not re.search(r"size|shape|dimension|mismatch|multipl", text, re.IGNORECASE):
        return []
    sizes = [int(n) for n in re.findall(r"(?<![A-Za-wyz_.\d])(\d+)(?![A-Za-wyz_.\d])", text)]
    fresh = [n for n in dict.fromkeys(sizes) if 2 <= n <= LARGEST_MISMATCH_SIZE]
    fresh = [n for n in fresh if n not in tried]
    return [(*tried[:-1], n) for n in fresh[:MISMATCH_SIZES]] if tried else []


def synthesise(
    repo_dir: Path,
    path: str,
    function: str,
    seed: int,
    device: str = "cpu",
    shape: tuple[int, ...] | None = None,
    operand: str = "",
    line: int | None = None,
) -> Entry:
    """A call for the function enclosing a finding, from what its code says; `shape`, for
    the parameters whose annotation gives none (default: batch x features); `operand`, the
    flagged op's operand text, whose parameters are searched even where they default to
    None; `line`, the flagged line, whose enclosing `if flag:` and `if mode == "x":` tests
    set those parameters, and whose float exponent parameters are made fractional
    (branches.py)."""
    module_name = module_name_for(repo_dir, path)
    try:
        loaded = load(repo_dir, module_name)
    except Exception as exc:  # the PR's module may fail to import for any reason
        raise EntryError(f"importing {module_name} failed: {type(exc).__name__}: {exc}") from exc
    module = loaded.module
    parts = function.split(".")
    called: Any = None  # what the entry calls, where that is not `obj` itself
    if "<locals>" in parts or function == "<module>":
        raise EntryError(f"{function} is not reachable from the module; configure an entry")
    try:
        obj = resolve_attr(module, function)
    except AttributeError as exc:
        outer = _enclosing_function(module, parts)
        if outer is None:
            extra = f" (the module was {loaded.how}: {loaded.why})" if loaded.why else ""
            raise EntryError(f"{module_name} has no {function}{extra}; configure an entry") from exc
        closure = parts[len(outer[0].split("."))]
        function, obj = outer  # a function defined inside it: calling it runs the op
        parts = function.split(".")
        if len(parts) == 1:  # or returns it: the closure is what gets called (factories.py)
            factory = factory_call(obj, closure, operand)
            if factory is not None:
                called, obj = factory, factory.made()
    target = f"{module_name}:{function}"
    if len(parts) >= 2:
        owner = resolve_attr(module, ".".join(parts[:-1]))
        if inspect.isclass(owner):
            entry = _method_entry(owner, parts[-1], target, seed, device, shape, line)
            return replace(
                entry,
                loading=loaded.how,
                loading_why=loaded.why,
                stand_ins=loaded.stand_ins,
                script_dirs=loaded.script_dirs,
                moved=loaded.moved,
            )
    # the enclosing tests' values win over a fractional exponent
    branch = (
        {**exponent_values(obj, line), **branch_values(obj, line)} if line is not None else None
    )
    uses = parameter_uses(obj)
    leading = _leading_sizes(obj, uses, shape or (DEFAULT_BATCH, DEFAULT_FEATURES))
    framework = framework_of(obj)
    found = signature_inputs(
        functools.partial(obj, *leading) if leading else obj,
        None,
        shape,
        operand_names=operand_names(operand),
        branch=branch,
        uses=uses,
        framework=framework,
    )
    # leading sizes go by position, before the searched tensors, and a list argument gathers
    # its elements: a template, as a recorded call's (harvest.py), which the reproducer
    # spells out the same way
    lists = found.template()
    template = [*leading, *(lists or found.slots)] if leading or lists else None
    return Entry(
        target,
        found.specs,
        obj if called is None else called,
        "synthesised",
        constants=found.constants,
        passed=found.chosen,
        template=template,
        template_kwargs=found.constants if template is not None else {},
        framework=framework,
        param_names=found.names if lists else _param_names(obj)[len(leading) :],
        device="cpu" if framework in ("tensorflow", "jax", "numpy") else device,
        loading=loaded.how,
        loading_why=loaded.why,
        stand_ins=loaded.stand_ins,
        script_dirs=loaded.script_dirs,
        moved=loaded.moved,
    )


def _leading_sizes(fn: Any, uses: ParameterUses, shape: tuple[int, ...]) -> list[Any]:
    """`shape` (the searched tensors' own, so what the code makes of it broadcasts with
    them) for each of the function's first positional parameters that its body uses as a
    size (`def _unsafe_standard_stable(shape, alpha, beta)`), and `DEFAULT_FEATURES` for
    each its docstring types as an integer (TensorFlow Probability's
    `_sample_multinomial_as_iterated_binomial(num_samples, num_classes, probs, ...)`): the
    tensors after them cannot be passed by position otherwise."""
    sizes: list[Any] = []
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return sizes
    for param in params:
        if param.default is not inspect.Parameter.empty or param.kind not in (
            param.POSITIONAL_ONLY,
            param.POSITIONAL_OR_KEYWORD,
        ):
            break
        if param.name in uses.sizes:
            sizes.append(shape)
        elif param.name in uses.integers and param.annotation is inspect.Parameter.empty:
            sizes.append(DEFAULT_FEATURES)
        else:
            break
    return sizes


def _enclosing_function(module: Any, parts: list[str]) -> tuple[str, Any] | None:
    """For `outer.inner` where `inner` is defined inside the function `outer` (a closure the
    module does not expose): the nearest enclosing function the module does expose."""
    for end in range(len(parts) - 1, 0, -1):
        qualname = ".".join(parts[:end])
        try:
            obj = resolve_attr(module, qualname)
        except AttributeError:
            continue
        if inspect.isfunction(obj):
            return qualname, obj
        return None  # a class or another object: its methods are reached another way
    return None


def _method_entry(
    owner: type,
    method: str,
    target: str,
    seed: int,
    device: str,
    shape: tuple[int, ...] | None = None,
    line: int | None = None,
) -> Entry:
    if framework_of(owner) == "tensorflow" and callable(getattr(owner, "build", None)):
        if method != "call":  # a metric's result(), a layer's helper: as a plain class's member
            return _object_entry(owner, method, target, seed, device, line)
        return _keras_entry(owner, method, target, seed)
    if not issubclass(owner, torch.nn.Module):
        return _object_entry(owner, method, target, seed, device, line)
    torch.manual_seed(seed)
    init = constructor_args(owner, guess_unannotated=True)
    try:
        instance = owner(**init)
    except TypeError as exc:
        return _built_module_entry(owner, method, target, seed, device, line, exc)
    except Exception as exc:  # the PR's constructor, on the values numcheck made up
        raise EntryError(
            f"{owner.__name__}({_spelled(init)}) failed: {type(exc).__name__}: "
            f"{str(exc)[:160]}; configure an entry with `init`"
        ) from exc
    first = _first_layer_spec(instance)
    bound = getattr(_place(instance, device), method)
    found = signature_inputs(bound, first, shape, uses=parameter_uses(bound))
    template = found.template()
    return Entry(
        target,
        found.specs,
        bound,
        "synthesised",
        constants=found.constants,
        passed=found.chosen,
        template=template,
        template_kwargs=found.constants if template is not None else {},
        init=init,
        is_method=True,
        param_names=found.names if template is not None else _param_names(bound),
        device=device,
    )


def _spelled(init: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in init.items())


def _built_module_entry(
    owner: type,
    method: str,
    target: str,
    seed: int,
    device: str,
    line: int | None,
    refused: TypeError,
) -> Entry:
    """A method of an nn.Module whose constructor needs what `constructor_args` cannot make
    up (PyG's `DegreeScalerAggregation(aggr, scaler, deg)`, a degree histogram `deg` the
    division's value comes from): built as a plain class's object is (objects.py), from
    searched constructor tensors and the text values the line needs, under the seed on every
    call. The constructor's own complaint is kept when that finds no way either."""
    try:
        return _object_entry(owner, method, target, seed, device, line, module_seed=seed)
    except EntryError as exc:
        raise EntryError(
            f"{owner.__name__}() needs constructor arguments ({refused}), and {exc}"
        ) from exc


def _object_entry(
    owner: type,
    member: str,
    target: str,
    seed: int,
    device: str,
    line: int | None = None,
    module_seed: int | None = None,
) -> Entry:
    """A member of a plain class (a distribution, a kernel, a metric): objects.py;
    `module_seed`, for an nn.Module's, set before each construction."""
    framework = framework_of(owner)
    torch.manual_seed(seed)
    _seed_tensorflow(framework, seed)
    found = object_inputs(owner, member, framework, line, module_seed)
    return Entry(
        target,
        found.specs,
        found.call,
        "synthesised",
        constants=found.constants,
        passed=found.chosen,
        framework=framework,
        param_names=found.param_names,
        device="cpu" if framework in ("tensorflow", "jax", "numpy") else device,
    )


def _keras_entry(owner: type, method: str, target: str, seed: int) -> Entry:
    """A Keras layer or model built with its defaults and called through `__call__` (which
    builds it on the first input): its `call` method's tensor parameters are the inputs."""
    if method != "call":
        raise EntryError(
            f"{owner.__name__}.{method} is not the layer's call; configure an entry that calls it"
        )
    _seed_tensorflow("tensorflow", seed)
    try:
        instance = owner()
    except TypeError as exc:
        raise EntryError(
            f"{owner.__name__}() needs constructor arguments ({exc}); "
            "configure an entry with `init`"
        ) from exc
    found = signature_inputs(instance.call, _keras_input_spec(instance), framework="tensorflow")
    template = found.template()
    return Entry(
        target,
        found.specs,
        instance,
        "synthesised",
        constants=found.constants,
        passed=found.chosen,
        template=template,
        template_kwargs=found.constants if template is not None else {},
        is_method=True,
        framework="tensorflow",
        param_names=found.names if template is not None else _param_names(instance.call),
    )


def _keras_input_spec(layer: Any) -> InputSpec | None:
    """The input a Keras layer expects, where it says: a functional model's Input, or an
    Embedding among its first sublayers (token ids)."""
    inputs = getattr(layer, "inputs", None)
    if isinstance(inputs, list) and len(inputs) == 1:  # a functional model
        shape = tuple(DEFAULT_BATCH if d is None else int(d) for d in inputs[0].shape)
        dtype = str(getattr(inputs[0].dtype, "name", inputs[0].dtype))
        return default_spec(shape) if "float" in dtype else None
    for value in vars(layer).values():
        if type(value).__name__ == "Embedding" and hasattr(value, "input_dim"):
            return InputSpec("int64", (DEFAULT_BATCH, 16), 0, int(value.input_dim) - 1, "default")
    return None


def framework_of(obj: Any) -> str:
    """ "tensorflow" when the code's module works with TensorFlow/Keras and not PyTorch,
    "jax" when it works with JAX and neither of them, "numpy" when it works with NumPy alone."""
    module = inspect.getmodule(obj if not isinstance(obj, torch.nn.Module) else type(obj))
    roots = (
        {
            getattr(v, "__name__", "").split(".", 1)[0]
            for v in vars(module).values()
            if inspect.ismodule(v)
        }
        if module
        else set()
    )
    if "torch" not in roots and roots & {"tensorflow", "keras", "tf_keras"}:
        return "tensorflow"
    if not roots & {"torch", "tensorflow", "keras", "tf_keras"} and "jax" in roots:
        return "jax"
    if not roots & {"torch", "tensorflow", "keras", "tf_keras", "jax"} and "numpy" in roots:
        return "numpy"
    return "torch"


def _seed_tensorflow(framework: str, seed: int) -> None:
    """Keras initialisers draw from Keras's own seed, not tf.random's: seed both (and the
    reproducer does the same, `reproducer.render`)."""
    if framework == "tensorflow":
        import tensorflow as tf

        try:
            tf.keras.utils.set_random_seed(seed)
        except (AttributeError, ImportError):  # a TensorFlow without Keras
            tf.random.set_seed(seed)


def _param_names(fn: Any) -> list[str]:
    """Positional parameter names of what calling `fn` runs (a module's forward, a Keras
    layer's call)."""
    return positional_names(
        fn.forward
        if isinstance(fn, torch.nn.Module)
        else (fn.call if hasattr(fn, "call") and not inspect.isfunction(fn) else fn)
    )


def _first_layer_spec(module: torch.nn.Module) -> InputSpec | None:
    """Shape of the input a module expects, read off its first shape-defining layer."""
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            return default_spec((DEFAULT_BATCH, layer.in_features))
        if isinstance(layer, torch.nn.Conv2d):
            return default_spec((DEFAULT_BATCH, layer.in_channels, 16, 16))
        if isinstance(layer, torch.nn.Conv1d):
            return default_spec((DEFAULT_BATCH, layer.in_channels, 32))
        if isinstance(layer, torch.nn.Embedding):
            return InputSpec("int64", (DEFAULT_BATCH, 16), 0, layer.num_embeddings - 1, "default")
        if isinstance(layer, torch.nn.LayerNorm):
            return default_spec((DEFAULT_BATCH, *layer.normalized_shape))
        if isinstance(layer, torch.nn.RNNBase):
            return default_spec((DEFAULT_BATCH, 8, layer.input_size))
    return None
