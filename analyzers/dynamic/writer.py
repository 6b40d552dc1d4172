"""The reproducer's text, written from a plan of names and numbers.

The sandbox's worker imports the PR's code into its own process, so whatever it sends back
may be the PR author's. A reproducer is code under numcheck's name that a reader runs, so its
text is never taken from the sandbox. The worker sends a *plan* instead (`reproducer.plan`,
`script.script_plan`): which way the code is loaded and called, names, numbers, and the few
constructor values a script can spell. The text is written here from the plan alone, in the
worker (to check that it fails on the head) and again on the host from the record's plan
(`runners/trusted.py`), with the finding's own path, line, op and call. Every name must be an
identifier, every value a number, a string literal or one of a few spelled types, every
free text one line in a comment; a plan that is anything else raises `PlanError`. So the
worst a forged plan gives is a wrong reproducer made of numcheck's own lines, never code of
the PR author's choosing.

No torch here: the host writes reproducers without the frameworks installed.
"""

from __future__ import annotations

import ast
import base64
import binascii
import functools
import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzers.catalogue import python_errors
from analyzers.dtypes import LOW_PRECISIONS
from analyzers.dynamic import moved
from analyzers.dynamic.layout import root_of
from analyzers.dynamic.loading import HOW, import_lines
from analyzers.dynamic.siblings import checked_dir
from analyzers.dynamic.standins import may_stand_in

FRAMEWORKS = ("torch", "tensorflow", "jax", "numpy")
WHERE = ("forward", "backward")
SHOWS = ("", "output", "gradient", "parameters", "raised", "exception")
# the names a reproducer's own imports bind (here, and in loading.py, standins.py and
# moved.py): an input must not take one, or it hides the module from the lines after it
IMPORTED_NAMES = frozenset(
    {"torch", "np", "tf", "jax", "jnp", "os", "sys", "traceback", "copy", "types", "base64"}
    | {"io", "ast", "importlib", "pathlib", "functools", "contextlib", "Any"}
)
# A reproducer of code the sandbox ran with `tf.keras` as Keras 2 (runners/keras_generation.py)
# says so before TensorFlow is imported, as the sandbox's run did
LEGACY_KERAS = [
    "# numcheck ran this code with tf.keras as Keras 2 (`pip install tf_keras`);",
    "# TensorFlow reads the choice when it is first imported",
    'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")',
]
STATE_WIDTH = 76  # characters of base64 per line of an embedded module state
MAX_DEPTH = 16  # nesting of a spelled value or a nested list of numbers
MAX_TEXT = 300  # characters of a free text kept in a comment
DEVICE = re.compile(r"[a-z]+(:[0-9]+)?\Z")
BASE64 = re.compile(r"[A-Za-z0-9+/=]*\Z")


class PlanError(ValueError):
    """A plan that is not one numcheck writes: a name that is not an identifier, a value
    that is not data. The message says which field."""


@dataclass(frozen=True)
class Target:
    """Where the reproducer says the bug is (the finding's own facts), and where the search
    saw it fail."""

    path: str
    line: int
    op: str
    call: str
    where: str  # "forward" | "backward": where the op itself goes non-finite
    # where the script sees it (search.Evaluation.visible): "output", or "gradient" when the
    # code hides the op's NaN/Inf from its output but not from the gradient reaching the
    # inputs (a masked or squashed forward value, 0 * inf in the backward pass); "" = as
    # `where` says (the output for forward, the inputs' gradients for backward); "parameters"
    # when only the gradient reaching the module's parameters is; "raised" (NumPy) when the
    # output is finite but the op raised the run's first floating-point flag; "exception" when
    # the op, on Python numbers, raised its Python error at the line (dynamic/raised.py)
    shows: str = ""

    @property
    def checks_gradient(self) -> bool:
        return self.where == "backward" or self.shows in ("gradient", "parameters")


# ------------------------------------------------------------------------- checking fields


def ident(value: Any, what: str) -> str:
    if isinstance(value, str) and value.isidentifier() and not keyword.iskeyword(value):
        return value
    raise PlanError(f"{what} is not an identifier")


def dotted(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise PlanError(f"{what} is not a dotted name")
    for part in value.split("."):
        ident(part, what)
    return value


def integer(value: Any, what: str, low: int = 0) -> int:
    if type(value) is int and value >= low:
        return value
    raise PlanError(f"{what} is not an integer >= {low}")


def number(value: Any, what: str) -> float | int | bool:
    if type(value) in (int, float, bool):
        return value
    raise PlanError(f"{what} is not a number")


def flag(value: Any, what: str) -> bool:
    if type(value) is bool:
        return value
    raise PlanError(f"{what} is not true or false")


def choice(value: Any, options: tuple[str, ...], what: str) -> str:
    if value in options:
        return str(value)
    raise PlanError(f"{what} is not one of {', '.join(options)}")


def _moved(value: Any) -> str:
    """A framework name the plan says was bound to where it moved: only one numcheck moves."""
    if isinstance(value, str) and moved.known(value):
        return value
    raise PlanError("a moved name is not one numcheck moves")


def optional(value: Any, check: Any, what: str) -> Any:
    return None if value is None else check(value, what)


def comment_text(value: Any, what: str) -> str:
    """Free text for a comment or a docstring: one line, no quotes or backslashes that
    could end either."""
    if not isinstance(value, str):
        raise PlanError(f"{what} is not text")
    text = re.sub(r"[\x00-\x1f\x7f\u2028\u2029\x85]+", " ", value)
    return text.replace("\\", "/").replace('"', "'")[:MAX_TEXT]


def _text(value: Any, what: str) -> str:
    """Text written as a string literal (repr): any text is safe there."""
    if isinstance(value, str):
        return value
    raise PlanError(f"{what} is not text")


def device(value: Any, what: str = "device") -> str:
    if isinstance(value, str) and DEVICE.match(value):
        return value
    raise PlanError(f"{what} is not a device name")


def shape(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, list) and len(value) <= MAX_DEPTH:
        return tuple(integer(v, what) for v in value)
    raise PlanError(f"{what} is not a shape")


def items(value: Any, what: str) -> list[Any]:
    if isinstance(value, list):
        return value
    raise PlanError(f"{what} is not a list")


def table(value: Any, what: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise PlanError(f"{what} is not an object")


def base64_text(value: Any, what: str) -> str:
    if isinstance(value, str) and BASE64.match(value):
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise PlanError(f"{what} is not base64") from exc
        return value
    raise PlanError(f"{what} is not base64")


# ------------------------------------------------------------------------------ literals


def python_literal(value: float | int | bool) -> str:
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, float):
        if value != value:
            return "float('nan')"
        if value in (float("inf"), float("-inf")):
            return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


def nested_literal(value: object, depth: int = 0) -> str:
    """A nested list of numbers as source (anything else raises PlanError)."""
    if depth > MAX_DEPTH:
        raise PlanError("a list of values is nested too deep")
    if isinstance(value, list):
        return "[" + ", ".join(nested_literal(v, depth + 1) for v in value) + "]"
    return python_literal(number(value, "a value"))


def unravel(index: int, dims: tuple[int, ...]) -> list[int]:
    out: list[int] = []
    for size in reversed(dims):
        out.append(index % size)
        index //= size
    return list(reversed(out))


def spell_value(value: Any, depth: int = 0) -> str:
    """A constructor or keyword argument as source, from its encoded form
    (`encoding.encode_value`): None, a bool, int, float or str as itself; a list, tuple,
    dict, bytes, torch dtype or device as a one-key object naming which."""
    if depth > MAX_DEPTH:
        raise PlanError("a value is nested too deep")
    if value is None or type(value) in (bool, int, str):
        return repr(value)
    if type(value) is float:
        return python_literal(value)
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "list":
            return "[" + ", ".join(spell_value(v, depth + 1) for v in items(inner, tag)) + "]"
        if tag == "tuple":
            spelled = [spell_value(v, depth + 1) for v in items(inner, tag)]
            return "(" + ", ".join(spelled) + ("," if len(spelled) == 1 else "") + ")"
        if tag == "dict":
            pairs = [items(pair, "a dict item") for pair in items(inner, tag)]
            if any(len(pair) != 2 for pair in pairs):
                raise PlanError("a dict item is not a key and a value")
            return (
                "{"
                + ", ".join(
                    f"{spell_value(k, depth + 1)}: {spell_value(v, depth + 1)}" for k, v in pairs
                )
                + "}"
            )
        if tag == "bytes":
            return repr(base64.b64decode(base64_text(inner, tag)))
        if tag == "dtype":
            return f"torch.{ident(inner, 'a dtype')}"
        if tag == "device":
            return f"torch.device({device(inner)!r})"
    raise PlanError("a value is not one numcheck spells")


def keywords(pairs: Any, what: str) -> list[str]:
    """`[[name, encoded value], ...]` as `name=value` arguments."""
    out = []
    for pair in items(pairs, what):
        pair = items(pair, what)
        if len(pair) != 2:
            raise PlanError(f"{what} holds an item that is not a name and a value")
        out.append(f"{ident(pair[0], what)}={spell_value(pair[1])}")
    return out


def arguments(rebuilt: dict[str, Any], what: str) -> str:
    """A recorded constructor call's arguments: `args` encoded, `kwargs` as keywords."""
    return ", ".join(
        [
            *(spell_value(v) for v in items(rebuilt.get("args", []), what)),
            *keywords(rebuilt.get("kwargs", []), what),
        ]
    )


# ----------------------------------------------------------------------------- tensors


def tensor_code(
    name: str, layout: dict[str, Any], framework: str = "torch", place: str = "cpu"
) -> list[str]:
    """A tensor from its layout (`encoding.layout`): written out in full, or a base value
    plus the elements that differ."""
    layout = table(layout, "a tensor")
    dtype = ident(layout.get("dtype"), "a tensor's dtype")
    dims = shape(layout.get("shape"), "a tensor's shape")
    is_float = flag(layout.get("float"), "a tensor's float flag")
    inline = flag(layout.get("inline"), "a tensor's layout")
    base = number(layout.get("base", 0), "a tensor's base value")
    if 0 in dims:  # empty: its nested list (`[]`) would lose the shape, so its dims make it
        return [_empty_code(name, dims, dtype, framework, place, is_float)]
    if framework == "tensorflow":  # tf tensors are immutable: large ones go via numpy
        if inline:
            return [
                f"{name} = tf.constant({nested_literal(layout.get('values'))}, dtype=tf.{dtype})"
            ]
        return [
            f"{name} = np.full({dims!r}, {python_literal(base)})",
            *points(name, layout.get("points"), dims),
            f"{name} = tf.constant({name}, dtype=tf.{dtype})",
        ]
    if framework == "jax":  # jax arrays are immutable too: large ones go via numpy
        if inline:
            return [
                f"{name} = jnp.array({nested_literal(layout.get('values'))}, dtype=jnp.{dtype})"
            ]
        return [
            f"{name} = np.full({dims!r}, {python_literal(base)})",
            *points(name, layout.get("points"), dims),
            f"{name} = jnp.array({name}, dtype=jnp.{dtype})",
        ]
    if framework == "numpy":
        if inline:
            return [f"{name} = np.array({nested_literal(layout.get('values'))}, dtype=np.{dtype})"]
        return [
            f"{name} = np.full({dims!r}, {python_literal(base)}, dtype=np.{dtype})",
            *points(name, layout.get("points"), dims),
        ]
    at = "" if place == "cpu" else f", device={place!r}"
    grad = ", requires_grad=True" if is_float else ""
    if inline:
        return [
            f"{name} = torch.tensor({nested_literal(layout.get('values'))}, "
            f"dtype=torch.{dtype}{at}{grad})"
        ]
    lines = [
        f"{name} = torch.full({dims!r}, {python_literal(base)}, dtype=torch.{dtype}{at})",
        *points(name, layout.get("points"), dims),
    ]
    if is_float:
        lines.append(f"{name}.requires_grad_()")
    return lines


def _empty_code(
    name: str, dims: tuple[int, ...], dtype: str, framework: str, place: str, is_float: bool
) -> str:
    """An empty tensor of the given dims (an empty batch: runners/harness._empty_trial)."""
    if framework == "tensorflow":
        return f"{name} = tf.zeros({dims!r}, dtype=tf.{dtype})"
    if framework == "jax":
        return f"{name} = jnp.zeros({dims!r}, dtype=jnp.{dtype})"
    if framework == "numpy":
        return f"{name} = np.zeros({dims!r}, dtype=np.{dtype})"
    at = "" if place == "cpu" else f", device={place!r}"
    grad = ", requires_grad=True" if is_float else ""
    return f"{name} = torch.zeros({dims!r}, dtype=torch.{dtype}{at}{grad})"


def points(name: str, changed: Any, dims: tuple[int, ...], indent: str = "") -> list[str]:
    """`name[i, j] = value` for each `[[i, j], value]`, each index inside `dims`."""
    out = []
    for point in items(changed, "the changed elements"):
        position, value = items(point, "a changed element")
        position = items(position, "an element's position")
        if len(position) != len(dims) or any(
            integer(i, "an index") >= size for i, size in zip(position, dims, strict=True)
        ):
            raise PlanError("an element's position is outside the tensor")
        out.append(
            f"{indent}{name}[{', '.join(map(str, position))}] = "
            f"{python_literal(number(value, 'an element'))}"
        )
    return out


def state_literal(state: Any) -> str:
    """A small state_dict, `{key: {"dtype", "values"}}`, as a dict literal a script (and
    `eval`) runs, values exact."""
    entries = []
    for key, value in table(state, "a module state").items():
        value = table(value, "a state tensor")
        entries.append(
            f"    {str(key)!r}: torch.tensor({nested_literal(value.get('values'))}, "
            f"dtype=torch.{ident(value.get('dtype'), 'a state dtype')}),"
        )
    return "\n".join(["{", *entries, "}"])


def weights_literal(weights: Any) -> str:
    """Small Keras variables, `[{"dtype", "values"}]`, as a list literal of numpy arrays."""
    arrays = []
    for value in items(weights, "the layer's variables"):
        value = table(value, "a variable")
        arrays.append(
            f"    np.array({nested_literal(value.get('values'))}, "
            f"dtype=np.{ident(value.get('dtype'), 'a variable dtype')}),"
        )
    return "\n".join(["[", *arrays, "]"])


def state_lines(state: str) -> list[str]:
    """The recorded state that differs from a fresh build: saved bytes, base64."""
    state = base64_text(state, "the embedded state")
    chunks = [state[i : i + STATE_WIDTH] for i in range(0, len(state), STATE_WIDTH)]
    return ["STATE = (", *[f'    "{chunk}"' for chunk in chunks], ")", "", ""]


# ------------------------------------------------------------------ an entry's reproducer


def written(plan: dict[str, Any], target: Target) -> tuple[dict[str, Any], str]:
    """The plan as the host will read it (through JSON, as the record carries it) and the
    text written from that: the very text the host writes again from the record."""
    read = json.loads(json.dumps(plan))
    return read, write(read, target)


def write(plan: Any, target: Target) -> str:
    """The reproducer's source for `plan` (an entry's or a script run's), pytest-style and
    runnable as a plain script; PlanError when the plan is not one numcheck makes."""
    plan = table(plan, "the plan")
    choice(target.where, WHERE, "where")
    choice(target.shows, SHOWS, "shows")
    kind = plan.get("kind")
    if kind == "script":
        return write_script(plan, target)
    if kind == "none":  # no standalone script can rebuild the code's state
        return no_reproducer(target, comment_text(plan.get("reason"), "the reason"))
    if kind != "entry":
        raise PlanError("the plan's kind is not entry, script or none")
    return _write_entry(plan, target)


def _write_entry(plan: dict[str, Any], target: Target) -> str:
    module = dotted(plan.get("module"), "the module")
    qualname = dotted(plan.get("qualname"), "the qualified name")
    parts = qualname.split(".")
    framework = choice(plan.get("framework"), FRAMEWORKS, "the framework")
    tf_mode, jax_mode = framework == "tensorflow", framework == "jax"
    numpy_mode = framework == "numpy"
    place = device(plan.get("device", "cpu"))
    dtype = ident(plan.get("dtype", "float32"), "the dtype")
    autocast = optional(plan.get("autocast"), ident, "the autocast dtype")
    seed = integer(plan.get("seed"), "the seed")
    loading = choice(plan.get("loading", "import"), HOW, "the loading")
    loading_why = comment_text(plan.get("loading_why", ""), "why the import failed")
    stand_ins = [
        _stand_in(name) for name in items(plan.get("stand_ins", []), "the stood-in modules")
    ]
    script_dirs = [
        _script_dir(folder) for folder in items(plan.get("script_dirs", []), "the script folders")
    ]
    moves = [_moved(name) for name in items(plan.get("moved", []), "the moved names")]
    inputs = items(plan.get("inputs"), "the inputs")
    names = [ident(table(i, "an input").get("name"), "an input's name") for i in inputs]
    if len(set(names)) != len(names):
        raise PlanError("two inputs have the same name")
    rebuild = optional(plan.get("rebuild"), table, "the rebuild")
    constructed = flag(plan.get("constructed", False), "constructed")
    # Keras initialisers follow keras' own seed, not tf.random's
    seeding = (
        (
            "tf.keras.utils.set_random_seed"
            if constructed and rebuild is None
            else "tf.random.set_seed"
        )
        if tf_mode
        else "torch.manual_seed"
    )
    body: list[str] = [] if jax_mode or numpy_mode else [f"{seeding}({seed})"]
    if rebuild is not None:
        imported = parts[0]
        body.extend(_keras_lines(rebuild) if tf_mode else _rebuild_lines(rebuild, seed))
        call = f"model.{parts[-1]}"
    elif constructed:
        owner = parts[0]
        imported = owner
        init = ", ".join(keywords(plan.get("init", []), "the constructor's values"))
        # under autocast the module keeps float32 weights: the dtype is the autocast one
        cast = f".to(torch.{dtype})" if dtype != "float32" and not tf_mode and not autocast else ""
        if place != "cpu":
            cast += f".to({place!r})"
        body.append(f"model = {owner}({init}){cast}")
        body.extend(_weight_lines(plan.get("weights", []), place))
        call = "model" if len(parts) == 1 else f"model.{parts[-1]}"
        if tf_mode and parts[-1] == "call":  # a Keras layer builds itself in __call__
            call = "model"
    else:
        imported = parts[0]
        call = qualname
    floats = []
    for name, given in zip(names, inputs, strict=True):
        layout = table(table(given, "an input").get("tensor"), "an input's tensor")
        body.extend(tensor_code(name, layout, framework, place))
        if flag(layout.get("float"), "a tensor's float flag"):
            floats.append(name)
    obj = optional(plan.get("object"), table, "the object call")
    if obj is not None:  # built from the first inputs, then its member
        body.extend(_object_lines(obj, ".".join(parts[:-1]), names, module))
        call = "run"
    factory = optional(plan.get("factory"), table, "the factory call")
    if factory is not None:  # the closure the function returns, then called
        if rebuild is not None or constructed or obj is not None or len(parts) != 1:
            raise PlanError("a factory's plan is a module-level function's call, alone")
        body.extend(_factory_lines(factory, qualname))
        call = "made"
    passed = keywords(plan.get("passed", []), "the passed constants")
    # the code writes into its inputs in place: it gets copies, the gradient reaches the leaves
    copies = flag(plan.get("copies_inputs", False), "copies_inputs")
    given = [f"{name}.clone()" if copies and name in floats else name for name in names]
    call_arguments = ", ".join([*given, *passed])
    template = plan.get("template")
    if template is not None:
        call_arguments = _replayed_arguments(
            template, plan.get("template_kwargs", []), given, body, framework, place
        )
    label = f"{target.op} at {target.path}:{target.line}"
    label = comment_text(label, "the label")
    if rebuild is not None and not tf_mode:  # the search ran the method under this seed
        body.append(f"torch.manual_seed({integer(rebuild.get('call_seed', 0), 'call seed')})")
    if target.shows == "exception":
        body.extend(_exception_check(call, call_arguments, label, target))
    elif tf_mode:
        body.extend(_tf_check(call, call_arguments, floats, label, target.checks_gradient))
    elif jax_mode:
        body.extend(_jax_check(call, names, call_arguments, floats, label, target.checks_gradient))
    elif numpy_mode:
        body.extend(_numpy_check(call, call_arguments, label, target))
    else:
        if flag(plan.get("float32_reference", False), "float32_reference"):
            body.extend(
                _float32_lines(
                    call,
                    call_arguments,
                    names,
                    floats,
                    passed,
                    label,
                    cast=dtype != "float32" and not autocast,
                    plain=template is None and obj is None and rebuild is None,
                    gradient=target.checks_gradient,
                )
            )
        contexts = []  # as Entry.call runs it: on the device, under autocast
        if place != "cpu":
            contexts.append(f"torch.device({place!r})")
        if autocast:
            contexts.append(f'torch.autocast("{place.split(":", 1)[0]}", dtype=torch.{autocast})')
        if contexts:
            body.append(f"with {', '.join(contexts)}:")
            body.append(f"    out = {call}({call_arguments})")
        else:
            body.append(f"out = {call}({call_arguments})")
        body.append(f'assert _finite(out), "{label} makes the output NaN/Inf"')
        if target.checks_gradient:
            body.append("total = sum(t.sum() for t in _tensors(out) if t.requires_grad)")
            body.append("total.backward()")
            for name in floats:
                body.append(
                    f"assert {name}.grad is None or "
                    f"bool(torch.isfinite({name}.grad).all()), "
                    f'"{label}: the gradient reaching {name} is NaN/Inf"'
                )
            if call.startswith("model"):  # the module's weights: what the optimiser updates
                body.append("for weight_name, weight in model.named_parameters():")
                braced = label.replace("{", "{{").replace("}", "}}")  # inside an f-string
                body.append(
                    "    assert weight.grad is None or "
                    "bool(torch.isfinite(weight.grad).all()), "
                    f'f"{braced}: the gradient reaching parameter {{weight_name}} is '
                    'NaN/Inf"'
                )
    test_name = f"test_{_slug(qualname)}_{_slug(target.op)}_is_finite"
    state = rebuild.get("state", "") if rebuild is not None else ""
    helpers = (
        TF_HELPERS
        if tf_mode
        else JAX_HELPERS
        if jax_mode
        else NUMPY_HELPERS
        if numpy_mode
        else TORCH_HELPERS
    )
    if target.shows == "exception":  # numpy_mode's helpers have `os` and `traceback` already
        helpers = [*helpers, "", "", *RAISED_HERE]
    framework_imports = (
        ["import numpy as np", "import tensorflow as tf"]
        if tf_mode
        else ["import jax", "import jax.numpy as jnp", "import numpy as np"]
        if jax_mode
        else ["import os", "import traceback", "", "import numpy as np"]
        if numpy_mode
        else ["import copy", "", "import torch"]
        if any("copy.deepcopy" in line for line in body)
        else ["import torch"]
    )
    stdlib = ["import os", "import traceback"] if target.shows == "exception" else []
    if any("types.SimpleNamespace(" in line for line in body):
        stdlib.append("import types")
    framework_imports = _with_stdlib(framework_imports, stdlib)
    if keras_2(plan):
        framework_imports = _legacy_keras_first(framework_imports)
    lines = [
        *_header(target, label, qualname),
        *(["import base64", "import io", ""] if state else []),
        *framework_imports,
        "",
        *import_lines(
            module,
            imported,
            loading,
            loading_why,
            _root(target.path, module),
            stand_ins,
            script_dirs,
            moves,
        ),
        "",
        "",
        *helpers,
        "",
        "",
        *(state_lines(state) if state else []),
        *runnable_test(test_name, [f"    {line}" for line in body]),
    ]
    return "\n".join(lines)


def _with_stdlib(imports: list[str], extra: list[str]) -> list[str]:
    """`imports` (an optional block of standard-library imports, a blank line, then the
    framework's) with `extra` merged into that first block, sorted and each once."""
    block, rest = (
        (imports[: imports.index("")], imports[imports.index("") + 1 :])
        if ("" in imports)
        else ([], imports)
    )
    merged = sorted({*block, *extra})
    return [*merged, "", *rest] if merged else rest


def keras_2(plan: dict[str, Any]) -> bool:
    """Whether the plan's code ran with `tf.keras` as Keras 2 (the harness says "2")."""
    return choice(plan.get("keras", "3"), ("2", "3"), "the Keras") == "2"


def _legacy_keras_first(imports: list[str]) -> list[str]:
    """`imports` with `import os` among the standard library's and the Keras 2 choice made
    after them, before the framework's imports."""
    merged = _with_stdlib(imports, ["import os"])
    cut = merged.index("")
    return [*merged[:cut], "", *LEGACY_KERAS, *merged[cut:]]


def _float32_lines(
    call: str,
    arguments: str,
    names: list[str],
    floats: list[str],
    passed: list[str],
    label: str,
    cast: bool,
    plain: bool,
    gradient: bool,
) -> list[str]:
    """A precision finding's first check: the same call in float32 is finite, and so are
    the gradients reaching its float32 copies of the inputs where the finding is checked by
    its gradient. Without autocast, on a float32 copy of a model cast to low precision. A
    call replayed from a recording or built from an object is run as recorded, forward only;
    one on a model cast to low precision is then not rewritten, and the check is left out."""
    message = f'"{label} is NaN/Inf in float32 too"'
    if not plain:
        if cast:
            return []
        return [
            "with torch.no_grad():  # float32 first: the bug is the low precision's",
            f"    out32 = {call}({arguments})",
            f"assert _finite(out32), {message}",
        ]
    lines = ["# float32 first: the same inputs are finite there, the bug is the low precision's"]
    if cast and call.startswith("model"):
        lines.append("model32 = copy.deepcopy(model).float()")
        call = "model32" + call[len("model") :]
    copies = [f"{name}32" for name in floats]
    lines.extend(f"{name}32 = {name}.detach().clone().float().requires_grad_()" for name in floats)
    given = ", ".join([*(f"{name}32" if name in floats else name for name in names), *passed])
    lines.append(f"out32 = {call}({given})")
    lines.append(f"assert _finite(out32), {message}")
    if gradient and copies:
        lines.append("sum(t.sum() for t in _tensors(out32) if t.requires_grad).backward()")
        lines.append(
            f"assert all(x.grad is None or bool(torch.isfinite(x.grad).all()) for x "
            f'in ({", ".join(copies)},)), {message[:-1]} (gradient)"'
        )
    return lines


def _stand_in(name: Any) -> str:
    """A plan's stood-in module: a dotted name, never the standard library's or a
    framework's own (a reproducer with a stand-in torch would prove nothing)."""
    name = dotted(name, "a stood-in module")
    if not may_stand_in(name):
        raise PlanError(f"the plan stands in for {name}, which numcheck never stands in for")
    return name


def _script_dir(value: Any) -> str:
    """A plan's folder for sys.path (siblings.py): a clean path relative to the repository,
    where the reproducer is saved; never absolute, never outside it."""
    folder = checked_dir(value)
    if folder is None:
        raise PlanError("a script folder of the plan is not a clean relative path")
    return folder


def _root(path: str, module: str) -> str:
    """The source folder the module's name is relative to (layout.py), "" for the root; a
    module that is not the file at `path` (a configured entry's) is imported as named."""
    try:
        return root_of(path, module)
    except ValueError:
        return ""


def runnable_test(name: str, body: list[str]) -> list[str]:
    """The test and the lines that run it when the file runs as a script."""
    return [f"def {name}():", *body, "", "", 'if __name__ == "__main__":', f"    {name}()", ""]


def _header(target: Target, label: str, qualname: str) -> list[str]:
    call = comment_text(target.call, "the call")
    fails = (
        f"raises {' or '.join(python_errors(target.op))}"
        if target.shows == "exception"
        else f"gives NaN/Inf in the {target.where} pass"
    )
    return [
        f'"""numcheck reproducer: `{call}` ({label}) {fails}.',
        *_shows_lines(target, qualname),
        "Save it at the repository root and run `python -m pytest <this file>` (or run it",
        "with python). It fails while the bug is there and passes once it is fixed.",
        '"""',
    ]


def _slug(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower() or "entry"


def _object_lines(obj: dict[str, Any], owner: str, names: list[str], module: str) -> list[str]:
    """`run(...)`: the object built from the constructor's inputs (and the constants
    numcheck chose for it), then its member, as `ObjectCall` does during the search; the
    objects it is built with (parts.py) first, from the first inputs."""
    dotted(owner, "the object's class")
    built, names = _part_lines(obj.get("parts", []), names, module)
    init_names = [
        ident(n, "a constructor input") for n in items(obj.get("init_names"), "constructor inputs")
    ]
    count = len(init_names)
    call_arguments = ", ".join(
        [
            *(f"{k}={n}" for k, n in zip(init_names, names, strict=False)),
            *(f"{name}={name}" for name in built),
            *keywords(obj.get("init", []), "the object's constants"),
        ]
    )
    passed = ", ".join([*_searched_arguments(obj.get("slots", []), names[count:]), "**kwargs"])
    member = ident(obj.get("member"), "the member")
    used = (
        f"obj.{member}"
        if flag(obj.get("property", False), "property")
        else f"obj.{member}({passed})"
    )
    params = ", ".join([*[n for lines in built.values() for n in lines[0]], *names, "**kwargs"])
    made = [line for _, lines in built.values() for line in lines]
    if flag(obj.get("bare", False), "bare"):  # usage.reads_self: no constructor runs
        return [
            f"def run({params}):",
            f"    # {member} never reads self: what the object is built with cannot matter",
            f"    obj = {owner}.__new__({owner})",
            f"    return {used}",
        ]
    seed = optional(obj.get("seed"), integer, "the object's seed")
    if obj.get("streams") is not None:  # a flax linen Module (linen.py): run bound
        return [
            f"def run({params}):",
            *made,
            f"    obj = {owner}({call_arguments})",
            *_linen_lines(obj.get("streams"), seed or 0, member, passed),
        ]
    seeded = (
        [] if seed is None else [f"    torch.manual_seed({seed})  # the same weights each time"]
    )
    return [
        f"def run({params}):",
        *made,
        *seeded,
        f"    obj = {owner}({call_arguments})",
        f"    return {used}",
    ]


def _linen_lines(streams: Any, seed: int, member: str, passed: str) -> list[str]:
    """A flax linen Module's member, run as `linen.apply_member` runs it: through `apply`
    with no variables and every collection mutable, so the parameters are made as `init`
    makes them, from the keys `seed`, `seed + 1`, ... for the random streams in order."""
    names = [ident(n, "a random stream") for n in items(streams, "random streams")]
    return [
        "    # a linen Module runs bound: apply() makes its parameters as init() would",
        f"    streams = {tuple(names)!r}",
        f"    rngs = {{name: jax.random.PRNGKey({seed} + i) for i, name in enumerate(streams)}}",
        f'    output, _ = obj.apply({{}}, {passed}, rngs=rngs, method="{member}", mutable=True)',
        "    return output",
    ]


def _factory_lines(factory: dict[str, Any], qualname: str) -> list[str]:
    """`made = factory(...)`, the closure it returns (factories.FactoryCall): the factory's
    constants, and for each function parameter the stand-in that returns its last argument."""
    callables = [
        ident(n, "a function parameter") for n in items(factory.get("callables", []), "callables")
    ]
    given = ", ".join(
        [
            *(f"{name}=_passes_through" for name in callables),
            *keywords(factory.get("init", []), "the factory's constants"),
        ]
    )
    where = "".join(
        _path_step(table(step, "a path step"))
        for step in items(factory.get("path", []), "the closure's path")
    )
    lines = []
    if callables:
        lines += [
            "def _passes_through(*args, **kwargs):",
            f"    # stands in for {', '.join(callables)}: numcheck made it up, and the failing",
            "    # value below does not come from it",
            "    return args[-1]",
        ]
    closure = ident(factory.get("closure"), "the closure's name")
    return [*lines, f"made = {qualname}({given}){where}  # {closure}, as {qualname} returns it"]


def _path_step(step: dict[str, Any]) -> str:
    """`[0]`, `["update"]` or `.update`: one step from the factory's result to its closure."""
    if "index" in step:
        return f"[{integer(step['index'], 'a path index')}]"
    if "key" in step:
        return f"[{_text(step['key'], 'a path key')!r}]"
    return f".{ident(step.get('attribute'), 'a path attribute')}"


def _part_lines(
    parts: Any, names: list[str], module: str
) -> tuple[dict[str, tuple[list[str], list[str]]], list[str]]:
    """({argument: (its input names, the lines that build it)}, the inputs left) for the
    plan's parts: each a class of the finding's own top-level package (a plan naming any
    other would make the reproducer build what the PR does not bring), from its inputs."""
    built: dict[str, tuple[list[str], list[str]]] = {}
    for part in items(parts, "the object's parts"):
        part = table(part, "a part")
        name = ident(part.get("name"), "a part's argument")
        part_module = dotted(part.get("module"), "a part's module")
        qualname = dotted(part.get("qualname"), "a part's class")
        if part_module.split(".")[0] != module.split(".")[0]:
            raise PlanError("a part's class is not of the finding's own package")
        init_names = [
            ident(n, "a part's input") for n in items(part.get("init_names"), "a part's inputs")
        ]
        if name in built or len(init_names) > len(names):
            raise PlanError("the plan's parts do not match its inputs")
        taken, names = names[: len(init_names)], names[len(init_names) :]
        top = qualname.split(".")[0]
        arguments = ", ".join(f"{k}={n}" for k, n in zip(init_names, taken, strict=True))
        built[name] = (
            taken,
            [f"    from {part_module} import {top}", f"    {name} = {qualname}({arguments})"],
        )
    return built, names


def _shows_lines(target: Target, qualname: str) -> list[str]:
    """The header's word on what the test sees (the op's NaN/Inf may be hidden from the
    output and show only in the gradient)."""
    if target.shows == "gradient" and target.where == "forward":
        return [
            f"`{qualname}` hides it from its output, but not from the gradient reaching its",
            "inputs: the test runs the backward pass and checks them.",
            "",
        ]
    if target.shows == "gradient":
        return [f"It reaches the gradient of the inputs of `{qualname}`.", ""]
    if target.shows == "parameters":
        return [
            f"`{qualname}` hides it from its output and its inputs' gradients, but not from",
            "the gradient reaching its parameters: the test runs the backward pass and",
            "checks them.",
            "",
        ]
    if target.shows == "output":
        return [f"It reaches the output of `{qualname}`.", ""]
    if target.shows == "exception":
        return [
            f"On Python numbers the {target.op} raises instead of returning inf/NaN: the test",
            "fails when the flagged line itself raises it.",
            "",
        ]
    return [""]


def _rebuild_lines(rebuild: dict[str, Any], seed: int) -> list[str]:
    """Construct the recorded module as the tests did, then load what differs and set the
    train/eval modes (a harvest.ModuleScript, checked in the worker before it is written)."""
    base_seed = integer(rebuild.get("base_seed", 0), "the construction seed")
    lines = [] if base_seed == seed else [f"torch.manual_seed({base_seed})"]
    dtype = optional(rebuild.get("dtype"), ident, "the module's dtype")
    cast = f".to(torch.{dtype})" if dtype else ""
    class_path = dotted(rebuild.get("class_path"), "the module's class")
    lines.append(f"model = {class_path}({arguments(rebuild, 'the constructor')}){cast}")
    literal, state = rebuild.get("state_literal"), rebuild.get("state", "")
    if literal or state:
        keys = [
            comment_text(k, "a state key")
            for k in items(rebuild.get("state_keys", []), "the state keys")
        ]
        lines.append(
            f"# the recorded values of {', '.join(keys[:6])}" + (", ..." if len(keys) > 6 else "")
        )
        if literal:
            lines += f"state = {state_literal(literal)}".splitlines()
        else:
            lines.append(
                "state = torch.load(io.BytesIO(base64.b64decode(STATE)), weights_only=True)"
            )
        lines.append("model.load_state_dict(state, strict=False)")
    lines.append(f"model.train({flag(rebuild.get('training', True), 'training')})")
    for mode in items(rebuild.get("modes", []), "the submodules' modes"):
        name, training = items(mode, "a submodule's mode")
        if not isinstance(name, str):
            raise PlanError("a submodule's name is not text")
        lines.append(f"model.get_submodule({name!r}).training = {flag(training, 'its mode')}")
    return lines


def _keras_lines(rebuild: dict[str, Any]) -> list[str]:
    """The recorded Keras layer rebuilt (a harvest_keras.KerasScript): constructed, built
    from its build config, holding the recorded variables."""
    class_path = dotted(rebuild.get("class_path"), "the layer's class")
    lines = [f"model = {class_path}({arguments(rebuild, 'the constructor')})"]
    if rebuild.get("build_config") is not None:
        lines.append(f"model.build_from_config({spell_value(rebuild['build_config'])})")
    lines.append("# the variables the layer held when the tests called it")
    if rebuild.get("weights") is not None:
        lines += f"model.set_weights({weights_literal(rebuild['weights'])})".splitlines()
    elif rebuild.get("state"):
        lines += [
            "saved = np.load(io.BytesIO(base64.b64decode(STATE)))",
            "model.set_weights([saved[f'arr_{i}'] for i in range(len(saved.files))])",
        ]
    return lines


def _weight_lines(weights: Any, place: str) -> list[str]:
    """`with torch.no_grad():` setting each configured weight the search changed: a small
    one (or one with many changed elements) copied in whole, a large one element by
    element."""
    before: list[str] = []
    inside: list[str] = []
    for weight in items(weights, "the weights"):
        weight = table(weight, "a weight")
        name = weight.get("name")
        if not isinstance(name, str) or not name:
            raise PlanError("a weight's name is not text")
        parameter = f"model.get_parameter({name!r})"
        if weight.get("tensor") is not None:
            variable = ident("w_" + re.sub(r"\W", "_", name), "a weight's variable")
            before += tensor_code(variable, weight["tensor"], "torch", place)
            inside.append(f"    {parameter}.copy_({variable})")
            continue
        inside += points(
            parameter, weight.get("points"), shape(weight.get("shape"), "a weight's shape"), "    "
        )
    if not inside:
        return []
    return [
        "# the weights the search set (the others as constructed)",
        *before,
        "with torch.no_grad():",
        *inside,
    ]


def no_reproducer(target: Target, reason: str) -> str:
    """No standalone script can rebuild the code's state: a script that says so and exits
    without an AssertionError, so the harness never reports it as a failing reproducer."""
    message = (
        f"numcheck: no standalone reproducer for {target.op} at "
        f"{target.path}:{target.line}: {reason}"
    )
    return "\n".join(
        [
            f'"""{comment_text(message, "the reason")}."""',
            "",
            f"raise SystemExit({message!r})",
            "",
        ]
    )


def _replayed_arguments(
    template: Any,
    template_kwargs: Any,
    names: list[str],
    body: list[str],
    framework: str,
    place: str,
) -> str:
    """A harvested call: searched inputs by name (a list of them in brackets), the recorded
    rest spelled out."""
    searched = iter(names)
    parts: list[str] = []
    for i, slot in enumerate(items(template, "the recorded arguments")):
        slot = table(slot, "a recorded argument")
        if slot.get("searched") or "searched_list" in slot:
            parts.append(_searched_argument(slot, searched))
        elif "tensor" in slot:
            name = f"arg{i}"
            body.extend(tensor_code(name, slot["tensor"], framework, place))
            parts.append(name)
        else:
            parts.append(spell_value(slot.get("value")))
    parts += keywords(template_kwargs, "the recorded keywords")
    return ", ".join(parts)


def _searched_argument(slot: dict[str, Any], searched: Any) -> str:
    """One searched argument: the next input's name, `[a, b]` (`(a, b)`) for a list (a
    tuple) of the next ones, or `types.SimpleNamespace(a=..., b=...)` for a namespace
    (lists.SearchedList)."""
    count = integer(slot["searched_list"], "a list's length", 1) if "searched_list" in slot else 0
    try:
        taken = [next(searched) for _ in range(max(count, 1))]
    except StopIteration as exc:
        raise PlanError("more searched arguments than inputs") from exc
    if not count:
        return taken[0]
    if "fields" in slot:  # a namespace's attributes (namespaces.py), one input each
        fields = [ident(f, "a namespace's attribute") for f in items(slot["fields"], "fields")]
        if len(fields) != count:
            raise PlanError("a namespace's attributes and its inputs differ in number")
        pairs = ", ".join(f"{f}={name}" for f, name in zip(fields, taken, strict=True))
        return f"types.SimpleNamespace({pairs})"
    if flag(slot.get("tuple", False), "a list's tuple flag"):
        return f"({', '.join(taken)}{',' if count == 1 else ''})"
    return f"[{', '.join(taken)}]"


def _searched_arguments(slots: Any, names: list[str]) -> list[str]:
    """The member's arguments of an object call: its inputs by name, or grouped into the
    lists its slots say (none: each input is one argument)."""
    listed = items(slots, "the member's slots")
    if not listed:
        return names
    searched = iter(names)
    grouped = [_searched_argument(table(slot, "a member's slot"), searched) for slot in listed]
    if next(searched, None) is not None:
        raise PlanError("more inputs than the member's slots take")
    return grouped


def _tf_check(
    call: str, call_arguments: str, floats: list[str], label: str, gradient: bool
) -> list[str]:
    """The call as the search made it (its constants and a recorded call's other arguments
    included), under a tape watching the float inputs."""
    lines = ["with tf.GradientTape(persistent=True) as tape:"]
    lines += [f"    tape.watch({name})" for name in floats]
    lines += [f"    out = {call}({call_arguments})"]
    if gradient:  # the sum must be taken under the tape to be differentiated
        lines += ["    total = tf.add_n([tf.reduce_sum(t) for t in tf.nest.flatten(out)])"]
    lines += [f'assert _finite(out), "{label} makes the output NaN/Inf"']
    if gradient:
        for name in floats:
            lines += [
                f"grad = tape.gradient(total, {name})",
                f"assert grad is None or bool(tf.reduce_all(tf.math.is_finite(grad))), "
                f'"{label}: the gradient reaching {name} is NaN/Inf"',
            ]
    return lines


def _jax_check(
    call: str, names: list[str], call_arguments: str, floats: list[str], label: str, gradient: bool
) -> list[str]:
    """Run the call with jit off (as the search did), check the output, then the gradient
    of the outputs' sum with respect to each float input."""
    lines = [
        "with jax.disable_jit():",
        f"    out = {call}({call_arguments})",
        f'assert _finite(out), "{label} makes the output NaN/Inf"',
    ]
    if gradient and floats:
        params = ", ".join(names)
        argnums = tuple(names.index(n) for n in floats)
        lines += [
            f"def _total({params}):",
            f"    return sum(jnp.sum(t) for t in jax.tree_util.tree_leaves("
            f"{call}({call_arguments})))",
            "with jax.disable_jit():",
            f"    grads = jax.grad(_total, argnums={argnums!r})({params})",
        ]
        for i, name in enumerate(floats):
            lines.append(
                f"assert bool(jnp.isfinite(grads[{i}]).all()), "
                f'"{label}: the gradient reaching {name} is NaN/Inf"'
            )
    return lines


def _numpy_check(call: str, call_arguments: str, label: str, target: Target) -> list[str]:
    """Run the call with NumPy's floating-point flags raised (as the search recorded them):
    the first one raised at the flagged line fails the test, one raised anywhere else is an
    error of its own; then the output must be finite."""
    return [
        'with np.errstate(divide="raise", over="raise", invalid="raise"):',
        "    try:",
        f"        out = {call}({call_arguments})",
        "    except FloatingPointError as exc:",
        f"        if _raised_at(exc, {target.path!r}, {target.line}):",
        f'            raise AssertionError("{label} makes NaN/Inf: " + str(exc)) from exc',
        "        raise",
        f'assert _finite(out), "{label} makes the output NaN/Inf"',
    ]


def _exception_check(call: str, call_arguments: str, label: str, target: Target) -> list[str]:
    """The call on Python numbers, as the search made it fail: the op's Python error raised
    by the flagged line itself fails the test; the same error raised anywhere else is an
    error of its own (dynamic/raised.py). Then the output must be finite."""
    kinds = ", ".join(python_errors(target.op))
    return [
        "try:",
        f"    out = {call}({call_arguments})",
        f"except ({kinds},) as exc:",
        f"    if _raised_here(exc, {target.path!r}, {target.line}):",
        f'        raise AssertionError("{label} raises " + type(exc).__name__ + ": " + str(exc))'
        " from exc",
        "    raise",
        f'assert _finite(out), "{label} makes the output NaN/Inf"',
    ]


RAISED_HERE = [
    "def _raised_here(exc, path, line):",
    '    """Did the flagged line itself raise it (the innermost frame)? A ValueError counts only',
    "    as math's domain error. The file name is relative where numcheck compiled the module",
    '    from its relative path."""',
    '    if type(exc) is ValueError and "math domain error" not in str(exc):',
    "        return False",
    "    last = traceback.extract_tb(exc.__traceback__)[-1]",
    '    mine = ("/" + last.filename.replace(os.sep, "/")).endswith("/" + path)',
    "    return mine and last.lineno == line",
]
NUMPY_HELPERS = [
    "def _finite(value):",
    "    if isinstance(value, (tuple, list)):",
    "        return all(_finite(v) for v in value)",
    "    if isinstance(value, dict):",
    "        return all(_finite(v) for v in value.values())",
    "    array = np.asarray(value) if isinstance(value, (float, np.ndarray, np.generic)) else None",
    '    return array is None or array.dtype.kind != "f" or bool(np.isfinite(array).all())',
    "",
    "",
    "def _raised_at(exc, path, line):",
    '    """Was the flag raised by the code at path:line (its last frame in that file)? The',
    '    file name is relative where numcheck compiled the module from its relative path."""',
    "    mine = [f for f in traceback.extract_tb(exc.__traceback__)",
    '            if ("/" + f.filename.replace(os.sep, "/")).endswith("/" + path)]',
    "    return bool(mine) and mine[-1].lineno == line",
]
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


# ---------------------------------------------------------------- a script run's reproducer


def write_script(plan: dict[str, Any], target: Target) -> str:
    """Script mode's reproducer: the configured command run with the external values the
    search changed substituted at their call sites; it carries its own copy of the
    interception code (`runtime_lines`), read from numcheck's installed source."""
    framework = choice(plan.get("framework"), ("torch", "tensorflow"), "the framework")
    tf_mode = framework == "tensorflow"
    seed = integer(plan.get("seed"), "the seed")
    argv = items(plan.get("argv"), "the command's arguments")
    if not argv or not all(isinstance(a, str) for a in argv):
        raise PlanError("the command's arguments are not text")
    command = comment_text(plan.get("command"), "the command")
    path = plan.get("path")
    if not isinstance(path, str):
        raise PlanError("the watched path is not text")
    watched_lines = sorted(
        integer(n, "a watched line", 1) for n in items(plan.get("lines"), "the lines")
    )
    steps = integer(plan.get("steps", 1), "the training steps", 1)
    autocast = optional(plan.get("autocast"), ident, "the autocast dtype")
    if autocast is not None and autocast not in LOW_PRECISIONS:
        raise PlanError("a script runs in mixed precision in bfloat16 or float16 only")
    label = comment_text(f"{target.op} at {target.path}:{target.line}", "the label")
    values: list[str] = []
    substitutes: list[str] = []
    for value in items(plan.get("values"), "the values"):
        value = table(value, "a value")
        number_ = integer(value.get("number"), "a value's number")
        value_label = value.get("label")
        if not isinstance(value_label, str):
            raise PlanError("a value's label is not text")
        values += [*_value_code(number_, value_label, value, tf_mode), "", ""]
        substitutes.append(f"    {value_label!r}: value_{number_},")
    slug = (
        re.sub(r"\W+", "_", Path(argv[1 if argv[0] == "-m" and len(argv) > 1 else 0]).stem)
        .strip("_")
        .lower()
    )
    test_name = f"test_{slug or 'script'}_{_slug(target.op)}_is_finite"
    if tf_mode:
        imports = ["import numpy as np", "import tensorflow as tf"]
        tf_draws = tuple(str(v) for v in _constant("script_tf.py", "TF_RANDOM_DRAWS"))
        runtime = [
            *runtime_lines(
                [f"TF_RANDOM_DRAWS = {tf_draws!r}"], ("script_tf.py", "TFExternalValues")
            ),
            *TF_HELPERS,
        ]
        pairs = [
            [_text(part, "a watched function") for part in items(pair, "a watched function")]
            for pair in items(plan.get("watched", []), "the watched functions")
        ]
        watched = f"({path!r}, {watched_lines!r}, {pairs!r})"
        make_mode = [
            "    mode = TFExternalValues(ROOT, os.path.join(ROOT, WATCHED[0]), "
            "WATCHED[1], WATCHED[2],",
            f"                            _substitute, "
            f"check_gradient={target.where == 'backward'})",
        ]
        check = _tf_checks(label, target.where == "backward")
    else:
        imports = ["import torch", "from torch.overrides import TorchFunctionMode"]
        runtime = [*torch_runtime(), *TORCH_HELPERS]
        watched_names = [
            _text(n, "an op's name") for n in items(plan.get("names", []), "the op's names")
        ]
        watched = f"({path!r}, {watched_lines!r}, {watched_names!r})"
        make_mode = [
            "    mode = ExternalValues(ROOT, os.path.join(ROOT, WATCHED[0]), "
            "WATCHED[1], WATCHED[2],",
            "                          _substitute)",
        ]
        operand = (
            optional(plan.get("operand"), integer, "the operand")
            if target.where == "backward"
            else None
        )
        check = _torch_checks(label, operand)
    # the run ends once the line has run (as many times as the search ran it), with the op
    # or without it: a fix that replaces the op must not leave the script running to its end
    make_mode.append("    mode.stop_at_line = True")
    if steps > 1:
        make_mode.append(f"    mode.stop_after = {steps}")
    call = comment_text(target.call, "the call")
    lines = [
        f'"""numcheck reproducer: `{call}` ({label}) gives NaN/Inf in the {target.where} pass',
        f"when `{command}` runs with the external values below substituted at their call",
        f"sites (everything else is what the script draws and loads under seed {seed}).",
        "",
        "Save it at the repository root and run `python -m pytest <this file>` (or run it",
        "with python). It fails while the bug is there and passes once it is fixed.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import contextlib",
        "import importlib",
        "import os",
        "import random",
        "import runpy",
        "import sys",
        "",
        *([*LEGACY_KERAS, ""] if keras_2(plan) else []),
        *imports,
        "",
        "ROOT = os.path.dirname(os.path.abspath(__file__))",
        f"ARGV = {[str(a) for a in argv]!r}",
        f"SEED = {seed}",
        f"WATCHED = {watched}",
        "",
        "",
        *values,
        "SUBSTITUTES = {",
        *substitutes,
        "}",
        "",
        "",
        *runtime,
        "",
        "",
        "def _substitute(label, natural):",
        "    build = SUBSTITUTES.get(label)",
        "    return natural if build is None else build(natural)",
        "",
        "",
        *runnable_test(
            test_name,
            [
                *make_mode,
                *_script_run(autocast, tf_mode),
                "    if not mode.hits:",
                f'        print("{label} no longer runs")',
                "        return",
                *check,
            ],
        ),
    ]
    return "\n".join(lines)


def _script_run(autocast: str | None, tf_mode: bool) -> list[str]:
    """The reproducer's run of the script: as it is, or in the mixed precision the search
    found the bug in (under torch.autocast; a TensorFlow script under Keras's global
    `mixed_<dtype>` policy, the one that was in force restored afterwards)."""
    run = "run_script(ROOT, ARGV, SEED, mode)"
    if autocast is None:
        return [f"    {run}"]
    if not tf_mode:
        return [
            "    # the script's mixed precision: every op under torch.autocast",
            f'    with torch.autocast("cpu", dtype=torch.{autocast}):',
            f"        {run}",
        ]
    return [
        f"    # the script's mixed precision: its layers compute in {autocast}, float32 weights",
        "    previous = tf.keras.mixed_precision.global_policy()",
        f'    tf.keras.mixed_precision.set_global_policy("mixed_{autocast}")',
        "    try:",
        f"        {run}",
        "    finally:",
        "        tf.keras.mixed_precision.set_global_policy(previous)",
    ]


def _value_code(number_: int, label: str, value: dict[str, Any], tf_mode: bool) -> list[str]:
    """One substitute: small values in full, large ones as the seeded value plus changes."""
    dtype = ident(value.get("dtype"), "a value's dtype")
    is_float = flag(value.get("float"), "a value's float flag")
    grad = ".requires_grad_()" if is_float and not tf_mode else ""
    lines = [f"def value_{number_}(natural):"]
    doc = comment_text(label, "a value's label")
    if value.get("points") is None:
        literal = nested_literal(value.get("values"))
        made = (
            f"tf.constant({literal}, dtype=tf.{dtype})"
            if tf_mode
            else f"torch.tensor({literal}, dtype=torch.{dtype}){grad}"
        )
        return [*lines, f'    """{doc}: written out in full."""', f"    return {made}"]
    changed = items(value["points"], "the changed elements")
    return [
        *lines,
        f'    """{doc}: what the seeded script gives, with {len(changed)} element(s) changed."""',
        "    x = np.array(natural.numpy())" if tf_mode else "    x = natural.detach().clone()",
        *points("x", changed, shape(value.get("shape"), "a value's shape"), "    "),
        "    return tf.constant(x)" if tf_mode else f"    return x{grad}",
    ]


def _torch_checks(label: str, operand: int | None) -> list[str]:
    check = [
        "    for out, _, _, _ in mode.hits:",
        f'        assert _finite(out), "{label} makes NaN/Inf"',
    ]
    if operand is not None:
        check += [
            "    out, args, kwargs, _ = mode.hits[0]",
            f"    operand = _tensors((args, kwargs))[{operand}]",
            "    if operand.requires_grad and out.requires_grad:",
            "        (grad,) = torch.autograd.grad(out, operand, torch.ones_like(out),",
            "                                      allow_unused=True)",
            f'        assert grad is None or _finite(grad), "{label}: its gradient is NaN/Inf"',
        ]
    return check


def _tf_checks(label: str, gradient: bool) -> list[str]:
    """TFExternalValues hits: (output, the op's local derivatives or None, name)."""
    check = [
        "    for out, grads, _ in mode.hits:",
        f'        assert _finite(out), "{label} makes NaN/Inf"',
    ]
    if gradient:
        check += [f'        assert _finite(grads or []), "{label}: its gradient is NaN/Inf"']
    return check


# The script runtime a reproducer carries: constants and definitions of callsites.py and
# script.py (and, for TensorFlow, script_tf.py), read from numcheck's own source files, so
# the host writes the same runtime the worker ran without importing torch.
RUNTIME_CONSTANTS = {
    "NUMPY_DRAWS": ("callsites.py", "NUMPY_DRAWS"),
    "NUMPY_LOADS": ("callsites.py", "NUMPY_LOADS"),
    "DISPATCH_FILES": ("callsites.py", "DISPATCH_FILES"),
    "MAX_FRAMES": ("callsites.py", "MAX_FRAMES"),
    # callsites.WATCH_FRAMES is the probe's own limit
    "WATCH_FRAMES": ("probe.py", "MAX_FRAMES"),
}
RUNTIME_DEFINITIONS = (
    ("callsites.py", "StopScript"),
    ("callsites.py", "CallSites"),
    ("{mode}", "{mode}"),
    ("script.py", "_Built"),
    ("callsites.py", "_numpy_draw"),
    ("script.py", "run_script"),
)


def torch_runtime() -> list[str]:
    draws = ", ".join(repr(name) for name in sorted(_constant("script.py", "RANDOM_DRAWS")))
    built = ", ".join(repr(name) for name in sorted(_constant("script.py", "BUILT")))
    return runtime_lines(
        [
            f"RANDOM_DRAWS = frozenset({{{draws}}})",
            f"BUILT = frozenset({{{built}}})",
            f"BUILT_TYPES = {_constant('script.py', 'BUILT_TYPES')!r}",
        ],
        ("script.py", "ExternalValues"),
    )


def runtime_lines(constants: list[str], mode: tuple[str, str]) -> list[str]:
    """The interception code a reproducer carries: the framework's own `constants`, the
    ones `CallSites` reads, and the classes and functions of one run with `mode` (a file of
    this folder and a class in it)."""
    lines = [
        *constants,
        *(f"{name} = {_constant(*where)!r}" for name, where in RUNTIME_CONSTANTS.items()),
        "",
        "",
    ]
    for where, name in RUNTIME_DEFINITIONS:
        where, name = mode if name == "{mode}" else (where, name)
        lines += _definition(where, name) + ["", ""]
    return lines


@functools.cache
def _source(file: str) -> tuple[list[str], ast.Module]:
    text = Path(__file__).with_name(file).read_text(encoding="utf-8")
    return text.split("\n"), ast.parse(text)


def _constant(file: str, name: str) -> Any:
    """A literal top-level constant of a runtime file, as a value."""
    for node in _source(file)[1].body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            value = node.value
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "frozenset"
                and len(value.args) == 1
            ):
                return frozenset(ast.literal_eval(value.args[0]))
            return ast.literal_eval(value)
    raise LookupError(f"{file} has no constant {name}")


def _definition(file: str, name: str) -> list[str]:
    """A top-level class or function of a runtime file, decorators included, as written."""
    source, module = _source(file)
    for node in module.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return source[first - 1 : node.end_lineno]
    raise LookupError(f"{file} has no definition {name}")
