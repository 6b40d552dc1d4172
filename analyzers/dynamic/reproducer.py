"""Turn a trigger into a short standalone test that fails on the PR head.

The trigger is first minimised (delta debugging toward a plain base value: 0 where the box
allows it), so the script shows the few values that matter instead of a wall of numbers.
Then `plan` says what the test does as names and numbers; `writer.write` turns the plan into
text, here to check it fails and on the host again for the review (runners/trusted.py).
"""

from __future__ import annotations

from typing import Any

import torch

from analyzers.dynamic.encoding import encode_keywords, encode_value, layout
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.factories import FactoryCall
from analyzers.dynamic.lists import SearchedList
from analyzers.dynamic.objects import ObjectCall
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.weights import split_for_script
from analyzers.dynamic.writer import IMPORTED_NAMES, Target, written


def _names(entry: Entry, count: int) -> list[str]:
    names = [n for n in entry.param_names if n not in ("self", "model", "out", "total")]
    # named like an imported module, an input gets a trailing underscore: as `types`, a
    # parameter of atom types made `types.SimpleNamespace(...)` an attribute of a tensor
    names = [f"{n}_" if n in IMPORTED_NAMES else n for n in names]
    if len(names) >= count and len(set(names[:count])) == count:
        return names[:count]
    return [f"x{i}" for i in range(count)]


def render(entry: Entry, inputs: list[torch.Tensor], target: Target, seed: int) -> str:
    """The reproducer's source, written from its plan as the host will write it (the plan
    through JSON first, so both see the same data)."""
    return written(plan(entry, inputs, target, seed), target)[1]


def plan(entry: Entry, inputs: list[torch.Tensor], target: Target, seed: int) -> dict[str, Any]:
    """What the reproducer does, as names and numbers (`writer.write` turns it into text):
    how the module is loaded, what is constructed and called with which tensors, what is
    checked. ValueError when a constructor value is one a script cannot spell."""
    module, _, qualname = entry.target.partition(":")
    rebuild = getattr(entry, "module_script", None)  # a recorded method call (harvest.py)
    reason = no_reproducer_reason(entry)
    if reason is not None:
        return {"kind": "none", "reason": reason}
    weights: list[dict[str, Any]] = []
    if entry.weights:  # configured weight ranges: set on the model, not passed (weights.py)
        entry, inputs, weights = split_for_script(entry, inputs)
    parts = qualname.split(".")
    names = _names(entry, len(inputs))
    out: dict[str, Any] = {
        "kind": "entry",
        "module": module,
        "qualname": qualname,
        "framework": entry.framework,
        "device": entry.device,
        "dtype": entry.dtype,
        "autocast": entry.autocast,
        "seed": seed,
        "loading": entry.loading,
        "loading_why": entry.loading_why,
        "stand_ins": list(entry.stand_ins),
        "script_dirs": list(getattr(entry, "script_dirs", ())),
        "moved": list(getattr(entry, "moved", ())),
        "constructed": bool(
            entry.is_method
            or entry.init
            or (
                len(parts) == 1
                and not _is_function(entry)
                and not isinstance(entry.fn, FactoryCall)
            )
        ),
        "rebuild": None if rebuild is None else rebuild.plan(),
        "init": encode_keywords(entry.init),
        "weights": weights,
        "inputs": [
            {"name": name, "tensor": layout(x, spec)}
            for name, x, spec in zip(names, inputs, entry.specs, strict=True)
        ],
        "passed": encode_keywords(entry.passed),
        "object": None,
        "factory": None,
        "template": None,
        "template_kwargs": [],
        "copies_inputs": entry.copies_inputs,
        "float32_reference": entry.float32_reference,
    }
    if isinstance(entry.fn, ObjectCall):  # built from the first inputs, then its member
        out["object"] = {
            "init_names": list(entry.fn.init_names),
            "init": encode_keywords(entry.fn.init),
            "member": entry.fn.member,
            "property": entry.fn.is_property,
            "bare": entry.fn.bare,
            "slots": [_slot(slot) for slot in entry.fn.slots],
            "seed": entry.fn.seed,
            "streams": None if entry.fn.streams is None else list(entry.fn.streams),
            "parts": [
                {
                    "name": part.name,
                    "module": part.owner.__module__,
                    "qualname": part.owner.__qualname__,
                    "init_names": list(part.init_names),
                }
                for part in entry.fn.parts
            ],
        }
    if isinstance(entry.fn, FactoryCall):  # the closure the function returns (factories.py)
        out["factory"] = {
            "closure": entry.fn.closure,
            "init": encode_keywords(entry.fn.init),
            "callables": list(entry.fn.callables),
            "path": [{kind: step} for kind, step in entry.fn.path],
        }
    if entry.template is not None:
        out["template"] = [_slot(slot) for slot in entry.template]
        out["template_kwargs"] = encode_keywords(entry.template_kwargs)
    return out


def _slot(slot: Any) -> dict[str, Any]:
    """A harvested call's argument: searched (None), a list (or a namespace) of searched
    inputs, a recorded tensor, or a value."""
    if slot is None:
        return {"searched": True}
    if isinstance(slot, SearchedList) and slot.fields:
        return {"searched_list": slot.length, "fields": list(slot.fields)}
    if isinstance(slot, SearchedList):
        return {"searched_list": slot.length, "tuple": slot.is_tuple}
    if isinstance(slot, torch.Tensor):
        dtype = str(slot.dtype).replace("torch.", "")
        spec = InputSpec(
            dtype,
            tuple(slot.shape),
            float(slot.min()) if slot.numel() else 0,
            float(slot.max()) if slot.numel() else 0,
            "observed",
        )
        return {"tensor": layout(slot, spec)}
    return {"value": encode_value(slot)}


def no_reproducer_reason(entry: Entry) -> str | None:
    """Why no standalone script can rebuild this entry's state (a recorded module whose
    constructor arguments or state a script cannot carry), or None. `render` then writes a
    script that exits with this reason instead of failing an assertion."""
    rebuild = getattr(entry, "module_script", None)
    return rebuild.reason if rebuild is not None and rebuild.reason else None


def _is_function(entry: Entry) -> bool:
    import inspect

    fn = inspect.unwrap(entry.fn)  # a `jax.jit` / functools.wraps wrapper: the function
    return inspect.isfunction(fn) or inspect.ismethod(fn)
