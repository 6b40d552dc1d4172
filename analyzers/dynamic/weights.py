"""Weight ranges: parameters of a configured nn.Module searched like inputs.

A NaN that only a trained weight reaches (a temperature learned down to 0, a scale gone
negative) is out of reach of the inputs alone while the module keeps its initial values.
`weights = "in [-1, 1]"` (every float parameter) or `weights = { temperature = "in [0, 10]",
"proj.weight" = "in [-0.5, 0.5]", "*" = "in [-1, 1]" }` (by `named_parameters()` name; `*`:
every other one) in an entries table makes the selected parameters extra inputs of the
entry, appended after the call's inputs, each with the parameter's own dtype and shape and
the configured box. The search starts from the module's initialised values, the call runs
through `torch.func.functional_call` (gradients reach the weight inputs), the minimiser moves
weights back toward those values, and the reproducer sets only the weights that differ.

Nothing here imports torch at module level: `analyzers.config` validates the syntax with
`parse_weights` without loading a framework.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from analyzers.dynamic.specs import InputSpec

if TYPE_CHECKING:
    import torch

    from analyzers.dynamic.entry import Entry

ALL = "*"  # in the table form: every float parameter not named otherwise
FORM = (
    'weights = "in [-1, 1]" (every float parameter) or weights = { temperature = '
    '"in [0, 10]", "proj.weight" = "in [-0.5, 0.5]" } (by named_parameters() name; '
    '"*" for the rest)'
)
_BOX = re.compile(r"^\s*in\s*\[\s*(?P<lo>[^,\[\]]+?)\s*,\s*(?P<hi>[^,\[\]]+?)\s*\]\s*$")

Boxes = dict[str, tuple[float, float]]


class WeightError(ValueError):
    """A weight selection that cannot be read; the message shows the accepted form."""


def parse_weights(value: object) -> Boxes:
    """The selection as written: parameter name (or `*`) -> (lo, hi)."""
    if isinstance(value, str):
        return {ALL: _box(value, "weights")}
    if isinstance(value, Mapping) and value:
        return {str(name): _box(box, f"weights.{name}") for name, box in value.items()}
    raise WeightError(f"weights must be a box or a table of boxes, got {value!r}; write {FORM}")


def _box(text: object, where: str) -> tuple[float, float]:
    """`in [lo, hi]`, as in an input spec: the dtype and shape are the parameter's own."""
    match = _BOX.match(text) if isinstance(text, str) else None
    if match is None:
        raise WeightError(
            f'cannot read {where} = {text!r}; write it as "in [lo, hi]" '
            f"(the parameter's dtype and shape are its own), as in {FORM}"
        )
    try:
        lo, hi = float(match["lo"]), float(match["hi"])
    except ValueError:
        raise WeightError(
            f'cannot read the bounds of {where} = {text!r}; write numbers, as in "in [-1.5, 2e3]"'
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise WeightError(f"the box of {where} = {text!r} must be finite: the search samples it")
    if lo > hi:
        raise WeightError(f"empty box in {where} = {text!r}: {lo:g} > {hi:g}")
    return lo, hi


def with_weights(entry: Entry, selection: object, seed: int = 0) -> Entry:
    """The configured entry with the selected parameters appended to its inputs (None: the
    entry as it is). EntryError when the entry is not a constructed PyTorch module or a
    name is not one of its float parameters."""
    if selection is None:
        return entry
    import torch

    from analyzers.dynamic.signatures import EntryError
    from analyzers.dynamic.tensors import sample

    try:
        boxes = parse_weights(selection)
    except WeightError as exc:
        raise EntryError(f"{entry.target}: {exc}") from exc
    if entry.framework == "tensorflow":
        raise EntryError(
            f"{entry.target}: weight ranges are supported for PyTorch modules "
            "only (this is TensorFlow/Keras code); drop `weights`"
        )
    if not isinstance(entry.fn, torch.nn.Module):
        raise EntryError(
            f"{entry.target}: `weights` needs a target that is an nn.Module "
            "class (constructed with `init`, then called); this one is "
            f"{_kind(entry.fn)}"
        )
    chosen = _select(entry.fn, boxes, entry.target)
    specs = [
        InputSpec(_dtype_name(p), tuple(p.shape), lo, hi, "config") for _, p, (lo, hi) in chosen
    ]
    start = [p.detach().to("cpu").clamp(lo, hi).clone() for _, p, (lo, hi) in chosen]
    generator = torch.Generator().manual_seed(seed)  # the call's inputs: a draw from the box
    inputs = [sample(spec, generator) for spec in entry.specs]
    return replace(
        entry,
        specs=[*entry.specs, *specs],
        start=[*inputs, *start],
        weights=tuple(name for name, _, _ in chosen),
    )


def _select(
    module: torch.nn.Module, boxes: Boxes, target: str
) -> list[tuple[str, torch.nn.Parameter, tuple[float, float]]]:
    """(name, parameter, box) for each selected float parameter, in the module's order."""
    floats = {name: p for name, p in module.named_parameters() if p.is_floating_point()}
    unknown = [name for name in boxes if name != ALL and name not in floats]
    if unknown:
        known = ", ".join(floats) or "none"
        raise _entry_error(
            f"{target}: weights names {', '.join(map(repr, unknown))}, which "
            f"{'is' if len(unknown) == 1 else 'are'} not a float parameter of "
            f"the module; its float parameters are: {known}"
        )
    chosen = []
    for name, parameter in floats.items():
        box = boxes.get(name, boxes.get(ALL))
        if box is not None:
            chosen.append((name, parameter, box))
    if not chosen:
        raise _entry_error(f"{target}: weights selects nothing: the module has no float parameters")
    return chosen


def _entry_error(message: str) -> Exception:
    from analyzers.dynamic.signatures import EntryError

    return EntryError(message)


def _kind(obj: object) -> str:
    import inspect

    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return "a function"
    return f"a {type(obj).__qualname__}, not an nn.Module"


def _dtype_name(x: torch.Tensor) -> str:
    return str(x.dtype).replace("torch.", "")


def natural_values(entry: Entry) -> list[Any]:
    """Per input: the module's initialised value for a weight (its ordinary value, clipped to
    the box), None for the call's inputs."""
    count = len(entry.weights)
    calls = len(entry.specs) - count
    start = list(entry.start or [])
    return [None] * calls + (start[calls:] if count else [])


def minimise_weights(
    entry: Entry, inputs: list[torch.Tensor], still_fails: Callable[[list[torch.Tensor]], bool]
) -> list[torch.Tensor]:
    """ddmin as for any entry, but the weights go back toward the module's own values (not
    toward 0), and first: a trigger on the real model with unusual inputs is more telling
    than one on unusual weights, and the reproducer sets only the few weights that matter."""
    import torch

    from analyzers.dynamic.minimise import MINIMISE_SECONDS, base_value, minimise_toward

    natural = natural_values(entry)
    plain = [
        torch.full_like(x, base_value(spec)) if value is None else None
        for x, spec, value in zip(inputs, entry.specs, natural, strict=True)
    ]
    half = MINIMISE_SECONDS / 2  # the two passes share one minimiser's time
    inputs = minimise_toward(inputs, natural, still_fails, budget=300, seconds=half)
    return minimise_toward(inputs, plain, still_fails, budget=300, seconds=half)


def split_for_script(
    entry: Entry, inputs: list[torch.Tensor]
) -> tuple[Entry, list[torch.Tensor], list[dict[str, Any]]]:
    """For the reproducer: the entry and inputs of the call alone, and the triggering
    weights to set on `model` (those that differ from a fresh build), as plan data."""
    calls = len(entry.specs) - len(entry.weights)
    weights = weight_plans(entry, inputs[calls:])
    return replace(entry, specs=entry.specs[:calls], weights=()), inputs[:calls], weights


def weight_plans(entry: Entry, values: Sequence[torch.Tensor]) -> list[dict[str, Any]]:
    """Each weight that differs from the module's own value (`writer._weight_lines` writes
    them under `torch.no_grad()`): a small one (or one with many changed elements) copied in
    whole, a large one element by element."""
    from analyzers.dynamic.encoding import INLINE_LIMIT, MAX_POINTS, layout
    from analyzers.dynamic.writer import unravel

    calls = len(entry.specs) - len(entry.weights)
    module: Any = entry.fn  # an nn.Module: `with_weights` checked it
    plans: list[dict[str, Any]] = []
    for name, value, spec in zip(entry.weights, values, entry.specs[calls:], strict=True):
        fresh = module.get_parameter(name).detach().to("cpu").reshape(-1)
        flat = value.detach().to("cpu", fresh.dtype).reshape(-1)
        changed = [int(i) for i in (flat != fresh).nonzero().reshape(-1)]
        if not changed:
            continue
        if value.numel() <= INLINE_LIMIT or len(changed) > MAX_POINTS:
            plans.append({"name": name, "tensor": layout(value, spec)})
            continue
        shape = tuple(value.shape)
        plans.append(
            {
                "name": name,
                "shape": list(shape),
                "points": [[unravel(i, shape), flat[i].item()] for i in changed],
            }
        )
    return plans
