"""Turn a trigger into a short standalone test that fails on the PR head.

The trigger is first minimised (delta debugging toward a plain base value: 0 where the box
allows it), so the script shows the few values that matter instead of a wall of numbers.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from analyzers.dynamic.entries import Entry, device_type
from analyzers.dynamic.loading import import_lines
from analyzers.dynamic.objects import ObjectCall
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.weights import split_for_script

INLINE_LIMIT = 12  # tensors with at most this many elements are written out in full
MAX_POINTS = 24  # beyond this many non-base values the tensor is written out in full
STATE_WIDTH = 76  # characters of base64 per line of an embedded module state


@dataclass(frozen=True)
class Target:
    """Where the reproducer says the bug is."""

    path: str
    line: int
    op: str
    call: str
    where: str  # "forward" | "backward": where the op itself goes non-finite
    # where the script sees it (search.Evaluation.visible): "output", or "gradient" when the
    # code hides the op's NaN/Inf from its output but not from the gradient reaching the
    # inputs (a masked or squashed forward value, 0 * inf in the backward pass); "" = as
    # `where` says (the output for forward, the inputs' gradients for backward); "parameters"
    # when only the gradient reaching the module's parameters is
    shows: str = ""

    @property
    def checks_gradient(self) -> bool:
        return self.where == "backward" or self.shows in ("gradient", "parameters")


def base_value(spec: InputSpec) -> float:
    return 0.0 if spec.lo <= 0 <= spec.hi else spec.lo


def minimise(inputs: list[torch.Tensor], specs: list[InputSpec],
             still_fails: Callable[[list[torch.Tensor]], bool], budget: int = 300) -> \
        list[torch.Tensor]:
    """ddmin over elements: reset chunks to the base value while the trigger persists."""
    bases = [torch.full_like(x, base_value(spec)) for x, spec in zip(inputs, specs, strict=True)]
    return minimise_toward(inputs, bases, still_fails, budget)


def minimise_toward(inputs: list[torch.Tensor], bases: Sequence[torch.Tensor | None],
                    still_fails: Callable[[list[torch.Tensor]], bool], budget: int,
                    seconds: float = math.inf) -> list[torch.Tensor]:
    """ddmin over elements: chunks of each input go back to its base (same shape; None: the
    input is left as it is) while the trigger persists, within `budget` trials and `seconds`."""
    current = [x.detach().clone() for x in inputs]
    spent, started = 0, time.perf_counter()

    def exhausted() -> bool:
        return spent >= budget or time.perf_counter() - started > seconds

    for which, base in enumerate(bases):
        if base is None:
            continue
        natural = base.detach().reshape(-1).to(current[which].dtype)
        differing = [int(i) for i in
                     torch.nonzero(current[which].reshape(-1) != natural).reshape(-1)]
        chunks = 2
        while differing and not exhausted():
            size = max(1, len(differing) // chunks)
            removed = False
            for start in range(0, len(differing), size):
                if exhausted():
                    break
                chunk = differing[start:start + size]
                trial = [x.clone() for x in current]
                flat = trial[which].reshape(-1)
                flat[chunk] = natural[chunk]
                trial[which] = flat.reshape(current[which].shape)
                spent += 1
                if still_fails(trial):
                    current = trial
                    gone = set(chunk)
                    differing = [i for i in differing if i not in gone]
                    removed = True
                    break
            if not removed:
                if size == 1:
                    break
                chunks = min(len(differing), chunks * 2)
    return current


def python_literal(value: float | int | bool) -> str:
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, float):
        if value != value:
            return "float('nan')"
        if value in (float("inf"), float("-inf")):
            return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


def spell(value: object) -> str:
    """A constructor argument as Python source a script can run, or ValueError naming what
    it is (exact types only: an IntEnum or a namedtuple would not print as source)."""
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return repr(value)
    if kind is float:
        return python_literal(value)  # type: ignore[arg-type]
    if isinstance(value, torch.dtype):
        return str(value)
    if kind is torch.device:
        return f"torch.device({str(value)!r})"
    if kind is list:
        return "[" + ", ".join(spell(v) for v in value) + "]"  # type: ignore[attr-defined]
    if kind is tuple:
        items = [spell(v) for v in value]  # type: ignore[attr-defined]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if kind is dict:
        return "{" + ", ".join(f"{spell(k)}: {spell(v)}"
                               for k, v in value.items()) + "}"  # type: ignore[attr-defined]
    raise ValueError(f"a {kind.__module__}.{kind.__qualname__}"
                     if kind.__module__ != "builtins" else f"a {kind.__qualname__}")


@dataclass(frozen=True)
class _Layout:
    """A tensor as the script writes it: in full, or a base value plus the points that differ."""

    values: torch.Tensor
    base: float
    points: list[tuple[tuple[int, ...], float | int | bool]]
    inline: bool


def _layout(x: torch.Tensor, spec: InputSpec) -> _Layout:
    values = x.detach() if spec.dtype == "bool" else x.detach().to(
        torch.float64 if spec.is_float else torch.int64)
    base = base_value(spec)
    flat = values.reshape(-1)
    indices = [int(i) for i in torch.nonzero(flat != base).reshape(-1)]
    inline = x.numel() <= INLINE_LIMIT or len(indices) > MAX_POINTS
    points = [(tuple(unravel(i, tuple(x.shape))), flat[i].item()) for i in indices]
    return _Layout(values, base, points, inline)


def _assignments(name: str, layout: _Layout) -> list[str]:
    return [f"{name}[{', '.join(map(str, position))}] = {python_literal(value)}"
            for position, value in layout.points]


def tensor_code(name: str, x: torch.Tensor, spec: InputSpec, framework: str = "torch",
                device: str = "cpu") -> list[str]:
    layout = _layout(x, spec)
    shape = tuple(x.shape)
    if framework == "tensorflow":  # tf tensors are immutable: large ones go via numpy
        dtype = f"tf.{spec.dtype}"
        if layout.inline:
            values = nested_literal(layout.values.tolist())
            return [f"{name} = tf.constant({values}, dtype={dtype})"]
        return [f"{name} = np.full({shape!r}, {python_literal(layout.base)})",
                *_assignments(name, layout), f"{name} = tf.constant({name}, dtype={dtype})"]
    if framework == "jax":  # jax arrays are immutable too: large ones go via numpy
        dtype = f"jnp.{spec.dtype}"
        if layout.inline:
            return [f"{name} = jnp.array({nested_literal(layout.values.tolist())}, "
                    f"dtype={dtype})"]
        return [f"{name} = np.full({shape!r}, {python_literal(layout.base)})",
                *_assignments(name, layout), f"{name} = jnp.array({name}, dtype={dtype})"]
    dtype = f"torch.{spec.dtype}"
    place = "" if device == "cpu" else f", device={device!r}"
    grad = ", requires_grad=True" if spec.is_float else ""
    if layout.inline:
        return [f"{name} = torch.tensor({nested_literal(layout.values.tolist())}, "
                f"dtype={dtype}{place}{grad})"]
    lines = [f"{name} = torch.full({shape!r}, {python_literal(layout.base)}, dtype={dtype}{place})",
             *_assignments(name, layout)]
    if spec.is_float:
        lines.append(f"{name}.requires_grad_()")
    return lines


def nested_literal(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(nested_literal(v) for v in value) + "]"
    return python_literal(value)  # type: ignore[arg-type]


def unravel(index: int, shape: tuple[int, ...]) -> list[int]:
    out: list[int] = []
    for size in reversed(shape):
        out.append(index % size)
        index //= size
    return list(reversed(out))


def _slug(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower() or "entry"


def _names(entry: Entry, count: int) -> list[str]:
    names = [n for n in entry.param_names if n not in ("self", "model", "out", "total")]
    if len(names) >= count and len(set(names[:count])) == count:
        return names[:count]
    return [f"x{i}" for i in range(count)]


def render(entry: Entry, inputs: list[torch.Tensor], target: Target, seed: int) -> str:
    """The reproducer's source: pytest-style, and runnable as a plain script."""
    module, _, qualname = entry.target.partition(":")
    parts = qualname.split(".")
    rebuild = getattr(entry, "module_script", None)  # a recorded method call (harvest.py)
    reason = no_reproducer_reason(entry)
    if reason is not None:
        return _no_reproducer(target, reason)
    weight_lines: list[str] = []
    if entry.weights:  # configured weight ranges: set on the model, not passed (weights.py)
        entry, inputs, weight_lines = split_for_script(entry, inputs)
    tf_mode = entry.framework == "tensorflow"
    jax_mode = entry.framework == "jax"
    names = _names(entry, len(inputs))
    constructed = entry.is_method or entry.init or (len(parts) == 1 and not _is_function(entry))
    # Keras initialisers follow keras' own seed, not tf.random's
    seeding = ("tf.keras.utils.set_random_seed" if constructed and rebuild is None
               else "tf.random.set_seed") if tf_mode else "torch.manual_seed"
    body: list[str] = [] if jax_mode else [f"{seeding}({seed})"]
    if rebuild is not None:
        imported = parts[0]
        body.extend(rebuild.lines() if tf_mode else _rebuild_lines(rebuild, seed))
        call = f"model.{parts[-1]}"
    elif constructed:
        owner = parts[0]
        imported = owner
        init = ", ".join(f"{k}={v!r}" for k, v in entry.init.items())
        # under autocast the module keeps float32 weights: entry.dtype is the autocast one
        cast = f".to(torch.{entry.dtype})" if entry.dtype != "float32" and not tf_mode \
            and not entry.autocast else ""
        if entry.device != "cpu":
            cast += f".to({entry.device!r})"
        body.append(f"model = {owner}({init}){cast}")
        body.extend(weight_lines)
        call = "model" if len(parts) == 1 else f"model.{parts[-1]}"
        if tf_mode and parts[-1] == "call":  # a Keras layer builds itself in __call__
            call = "model"
    else:
        imported = parts[0]
        call = qualname
    for name, x, spec in zip(names, inputs, entry.specs, strict=True):
        body.extend(tensor_code(name, x, spec, entry.framework, entry.device))
    if isinstance(entry.fn, ObjectCall):  # built from the first inputs, then its member
        body.extend(_object_lines(entry.fn, ".".join(parts[:-1]), names))
        call = "run"
    arguments = ", ".join([*names, *(f"{k}={v!r}" for k, v in entry.passed.items())])
    if entry.template is not None:
        arguments = _replayed_arguments(entry, names, body)
    label = f"{target.op} at {target.path}:{target.line}"
    floats = [n for n, spec in zip(names, entry.specs, strict=True) if spec.is_float]
    if rebuild is not None and not tf_mode:  # the search ran the method under this seed
        body.append(f"torch.manual_seed({rebuild.call_seed})")
    if tf_mode:
        body.extend(_tf_check(call, names, floats, label, target.checks_gradient))
    elif jax_mode:
        body.extend(_jax_check(call, names, arguments, floats, label,
                               target.checks_gradient))
    else:
        contexts = []  # as Entry.call runs it: on the device, under autocast
        if entry.device != "cpu":
            contexts.append(f"torch.device({entry.device!r})")
        if entry.autocast:
            contexts.append(f"torch.autocast(\"{device_type(entry.device)}\", "
                            f"dtype=torch.{entry.autocast})")
        if contexts:
            body.append(f"with {', '.join(contexts)}:")
            body.append(f"    out = {call}({arguments})")
        else:
            body.append(f"out = {call}({arguments})")
        body.append(f"assert _finite(out), \"{label} makes the output NaN/Inf\"")
        if target.checks_gradient:
            body.append("total = sum(t.sum() for t in _tensors(out) if t.requires_grad)")
            body.append("total.backward()")
            for name in floats:
                body.append(f"assert {name}.grad is None or "
                            f"bool(torch.isfinite({name}.grad).all()), "
                            f"\"{label}: the gradient reaching {name} is NaN/Inf\"")
            if call.startswith("model"):  # the module's weights: what the optimiser updates
                body.append("for weight_name, weight in model.named_parameters():")
                body.append("    assert weight.grad is None or "
                            "bool(torch.isfinite(weight.grad).all()), "
                            f"f\"{label}: the gradient reaching parameter {{weight_name}} is "
                            "NaN/Inf\"")
    test_name = f"test_{_slug(qualname)}_{target.op}_is_finite"
    header = [
        f'"""numcheck reproducer: `{target.call}` ({label}) gives NaN/Inf '
        f'in the {target.where} pass.',
        *_shows_lines(target, qualname),
        "Save it at the repository root and run `python -m pytest <this file>` (or run it",
        "with python). It fails while the bug is there and passes once it is fixed.",
        '"""',
    ]
    helpers = TF_HELPERS if tf_mode else JAX_HELPERS if jax_mode else TORCH_HELPERS
    framework_imports = ["import numpy as np", "import tensorflow as tf"] if tf_mode else \
        ["import jax", "import jax.numpy as jnp", "import numpy as np"] if jax_mode else \
        ["import torch"]
    lines = [
        *header,
        *(["import base64", "import io", ""] if rebuild is not None and rebuild.state else []),
        *framework_imports,
        "",
        *import_lines(module, imported, entry.loading, entry.loading_why),
        "",
        "",
        *helpers,
        "",
        "",
        *(_state_lines(rebuild) if rebuild is not None and rebuild.state else []),
        f"def {test_name}():",
        *[f"    {line}" for line in body],
        "",
        "",
        'if __name__ == "__main__":',
        f"    {test_name}()",
        "",
    ]
    return "\n".join(lines)


def _object_lines(fn: ObjectCall, owner: str, names: list[str]) -> list[str]:
    """`run(...)`: the object built from the constructor's inputs (and the constants
    numcheck chose for it), then its member, as `ObjectCall` does during the search."""
    count = len(fn.init_names)
    arguments = ", ".join([*(f"{k}={n}" for k, n in zip(fn.init_names, names, strict=False)),
                           *(f"{k}={v!r}" for k, v in fn.init.items())])
    passed = ", ".join([*names[count:], "**kwargs"])
    member = f"obj.{fn.member}" if fn.is_property else f"obj.{fn.member}({passed})"
    params = ", ".join([*names, "**kwargs"])
    return [f"def run({params}):",
            f"    obj = {owner}({arguments})",
            f"    return {member}"]


def _shows_lines(target: Target, qualname: str) -> list[str]:
    """The header's word on what the test sees (the op's NaN/Inf may be hidden from the
    output and show only in the gradient)."""
    if target.shows == "gradient" and target.where == "forward":
        return [f"`{qualname}` hides it from its output, but not from the gradient reaching its",
                "inputs: the test runs the backward pass and checks them.", ""]
    if target.shows == "gradient":
        return [f"It reaches the gradient of the inputs of `{qualname}`.", ""]
    if target.shows == "parameters":
        return [f"`{qualname}` hides it from its output and its inputs' gradients, but not from",
                "the gradient reaching its parameters: the test runs the backward pass and",
                "checks them.", ""]
    if target.shows == "output":
        return [f"It reaches the output of `{qualname}`.", ""]
    return [""]


def _rebuild_lines(rebuild: Any, seed: int) -> list[str]:
    """Construct the recorded module as the tests did, then load what differs and set the
    train/eval modes (a harvest.ModuleScript, checked in the harness before it is written)."""
    lines = [] if rebuild.base_seed == seed else [f"torch.manual_seed({rebuild.base_seed})"]
    cast = f".to(torch.{rebuild.dtype})" if rebuild.dtype else ""
    lines.append(f"model = {rebuild.class_path}({rebuild.init_source}){cast}")
    if rebuild.state_source or rebuild.state:
        lines.append(f"# the recorded values of {', '.join(rebuild.state_keys[:6])}"
                     + (", ..." if len(rebuild.state_keys) > 6 else ""))
        if rebuild.state_source:
            lines += f"state = {rebuild.state_source}".splitlines()
        else:
            lines.append("state = torch.load(io.BytesIO(base64.b64decode(STATE)), "
                         "weights_only=True)")
        lines.append("model.load_state_dict(state, strict=False)")
    lines.append(f"model.train({rebuild.training})")
    lines += [f"model.get_submodule({name!r}).training = {mode}"
              for name, mode in rebuild.modes]
    return lines


def state_literal(state: dict[str, torch.Tensor]) -> str:
    """A small state_dict as a dict literal a script (and `eval`) can run, values exact."""
    entries = []
    for key, value in state.items():
        dtype = str(value.dtype).replace("torch.", "")
        entries.append(f"    {key!r}: torch.tensor({nested_literal(value.tolist())}, "
                       f"dtype=torch.{dtype}),")
    return "\n".join(["{", *entries, "}"])


def _state_lines(rebuild: Any) -> list[str]:
    """The recorded state that differs from a fresh build: torch.save bytes, base64."""
    chunks = [rebuild.state[i:i + STATE_WIDTH]
              for i in range(0, len(rebuild.state), STATE_WIDTH)]
    return ["STATE = (", *[f'    "{chunk}"' for chunk in chunks], ")", "", ""]


def no_reproducer_reason(entry: Entry) -> str | None:
    """Why no standalone script can rebuild this entry's state (a recorded module whose
    constructor arguments or state a script cannot carry), or None. `render` then writes a
    script that exits with this reason instead of failing an assertion."""
    rebuild = getattr(entry, "module_script", None)
    return rebuild.reason if rebuild is not None and rebuild.reason else None


def _no_reproducer(target: Target, reason: str) -> str:
    """No standalone script can rebuild the code's state: a script that says so and exits
    without an AssertionError, so the harness never reports it as a failing reproducer."""
    message = f"numcheck: no standalone reproducer for {target.op} at " \
              f"{target.path}:{target.line}: {reason}"
    return "\n".join([
        f'"""{message.replace(chr(34), chr(39))}."""',
        "",
        f"raise SystemExit({message!r})",
        "",
    ])


def _replayed_arguments(entry: Entry, names: list[str], body: list[str]) -> str:
    """A harvested call: searched inputs by name, the recorded rest spelled out."""
    searched = iter(names)
    parts: list[str] = []
    for i, slot in enumerate(entry.template or []):
        if slot is None:
            parts.append(next(searched))
        elif isinstance(slot, torch.Tensor):
            name = f"arg{i}"
            dtype = str(slot.dtype).replace("torch.", "")
            spec = InputSpec(dtype, tuple(slot.shape), float(slot.min()) if slot.numel() else 0,
                             float(slot.max()) if slot.numel() else 0, "observed")
            body.extend(tensor_code(name, slot, spec, entry.framework, entry.device))
            parts.append(name)
        else:
            parts.append(repr(slot))
    parts += [f"{k}={v!r}" for k, v in entry.template_kwargs.items()]
    return ", ".join(parts)


def _is_function(entry: Entry) -> bool:
    import inspect

    fn = inspect.unwrap(entry.fn)  # a `jax.jit` / functools.wraps wrapper: the function
    return inspect.isfunction(fn) or inspect.ismethod(fn)


def _tf_check(call: str, names: list[str], floats: list[str], label: str,
              gradient: bool) -> list[str]:
    lines = ["with tf.GradientTape(persistent=True) as tape:"]
    lines += [f"    tape.watch({name})" for name in floats]
    lines += [f"    out = {call}({', '.join(names)})"]
    if gradient:  # the sum must be taken under the tape to be differentiated
        lines += ["    total = tf.add_n([tf.reduce_sum(t) for t in tf.nest.flatten(out)])"]
    lines += [f"assert _finite(out), \"{label} makes the output NaN/Inf\""]
    if gradient:
        for name in floats:
            lines += [f"grad = tape.gradient(total, {name})",
                      f"assert grad is None or bool(tf.reduce_all(tf.math.is_finite(grad))), "
                      f"\"{label}: the gradient reaching {name} is NaN/Inf\""]
    return lines


def _jax_check(call: str, names: list[str], arguments: str, floats: list[str], label: str,
               gradient: bool) -> list[str]:
    """Run the call with jit off (as the search did), check the output, then the gradient
    of the outputs' sum with respect to each float input."""
    lines = ["with jax.disable_jit():", f"    out = {call}({arguments})",
             f"assert _finite(out), \"{label} makes the output NaN/Inf\""]
    if gradient and floats:
        params = ", ".join(names)
        argnums = tuple(names.index(n) for n in floats)
        lines += [f"def _total({params}):",
                  f"    return sum(jnp.sum(t) for t in jax.tree_util.tree_leaves("
                  f"{call}({arguments})))",
                  "with jax.disable_jit():",
                  f"    grads = jax.grad(_total, argnums={argnums!r})({params})"]
        for i, name in enumerate(floats):
            lines.append(f"assert bool(jnp.isfinite(grads[{i}]).all()), "
                         f"\"{label}: the gradient reaching {name} is NaN/Inf\"")
    return lines


JAX_HELPERS = [
    "def _finite(value):",
    "    return all(bool(jnp.isfinite(t).all()) for t in jax.tree_util.tree_leaves(value)",
    "               if jnp.issubdtype(jnp.asarray(t).dtype, jnp.floating))",
]
TORCH_HELPERS = [
    "def _tensors(value):",
    "    if isinstance(value, torch.Tensor):",
    "        return [value]",
    "    if isinstance(value, (tuple, list)):",
    "        return [t for v in value for t in _tensors(v)]",
    "    if isinstance(value, dict):",
    "        return [t for v in value.values() for t in _tensors(v)]",
    "    return []",
    "",
    "",
    "def _finite(value):",
    "    return all(bool(torch.isfinite(t).all()) for t in _tensors(value)",
    "               if t.is_floating_point())",
]
TF_HELPERS = [
    "def _finite(value):",
    "    return all(bool(tf.reduce_all(tf.math.is_finite(t))) for t in tf.nest.flatten(value)",
    "               if isinstance(t, tf.Tensor) and t.dtype.is_floating)",
]
