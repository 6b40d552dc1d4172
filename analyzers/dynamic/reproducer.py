"""Turn a trigger into a short standalone test that fails on the PR head.

The trigger is first minimised (delta debugging toward a plain base value: 0 where the box
allows it), so the script shows the few values that matter instead of a wall of numbers.
Then `plan` says what the test does as names and numbers; `writer.write` turns the plan into
text, here to check it fails and on the host again for the review (runners/trusted.py).
"""

from __future__ import annotations

import base64
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from analyzers.dynamic.entries import Entry
from analyzers.dynamic.objects import ObjectCall
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.weights import split_for_script
from analyzers.dynamic.writer import Target, spell_value, unravel, written

INLINE_LIMIT = 12  # tensors with at most this many elements are written out in full
MAX_POINTS = 24  # beyond this many non-base values the tensor is written out in full


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


def encode_value(value: object) -> Any:
    """A constructor or keyword argument as plan data (`writer.spell_value` writes it), or
    ValueError naming what it is: a value a script cannot spell."""
    kind = type(value)
    if value is None or kind in (bool, int, str, float):
        return value
    if kind.__module__ == "numpy" and getattr(value, "shape", None) == ():
        plain = value.item()  # type: ignore[attr-defined]  # a numpy scalar: its plain value
        if type(plain) in (bool, int, float):
            return plain
    if kind is bytes:
        return {"bytes": base64.b64encode(value).decode("ascii")}  # type: ignore[arg-type]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).replace("torch.", "")}
    if kind is torch.device:
        return {"device": str(value)}
    if kind is list:
        return {"list": [encode_value(v) for v in value]}  # type: ignore[attr-defined]
    if kind is tuple:
        return {"tuple": [encode_value(v) for v in value]}  # type: ignore[attr-defined]
    if kind is dict:
        return {"dict": [[encode_value(k), encode_value(v)]
                         for k, v in value.items()]}  # type: ignore[attr-defined]
    raise ValueError(f"a {kind.__module__}.{kind.__qualname__}"
                     if kind.__module__ != "builtins" else f"a {kind.__qualname__}")


def spell(value: object) -> str:
    """A constructor argument as Python source a script can run, or ValueError naming what
    it is (exact types, and numpy's scalars as their plain values: an IntEnum or a
    namedtuple would not print as source)."""
    return spell_value(encode_value(value))


def encode_keywords(values: dict[str, Any]) -> list[list[Any]]:
    return [[name, encode_value(value)] for name, value in values.items()]


def layout(x: torch.Tensor, spec: InputSpec) -> dict[str, Any]:
    """A tensor as the plan holds it (`writer.tensor_code` writes it): in full when small
    (or when too many elements differ), else a base value plus the points that differ."""
    values = x.detach().to("cpu")
    values = values if spec.dtype == "bool" else values.to(
        torch.float64 if spec.is_float else torch.int64)
    base = base_value(spec)
    flat = values.reshape(-1)
    indices = [int(i) for i in torch.nonzero(flat != base).reshape(-1)]
    out: dict[str, Any] = {"dtype": spec.dtype, "shape": list(x.shape),
                           "float": spec.is_float, "base": base,
                           "inline": x.numel() <= INLINE_LIMIT or len(indices) > MAX_POINTS}
    if out["inline"]:
        out["values"] = values.tolist()
    else:
        out["points"] = [[unravel(i, tuple(x.shape)), flat[i].item()] for i in indices]
    return out


def tensor_data(value: torch.Tensor) -> dict[str, Any]:
    """A whole tensor as plan data: its dtype and every value (a small recorded state)."""
    return {"dtype": str(value.dtype).replace("torch.", ""), "values": value.tolist()}


def _names(entry: Entry, count: int) -> list[str]:
    names = [n for n in entry.param_names if n not in ("self", "model", "out", "total")]
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
        "kind": "entry", "module": module, "qualname": qualname,
        "framework": entry.framework, "device": entry.device, "dtype": entry.dtype,
        "autocast": entry.autocast, "seed": seed, "loading": entry.loading,
        "loading_why": entry.loading_why, "stand_ins": list(entry.stand_ins),
        "script_dirs": list(getattr(entry, "script_dirs", ())),
        "moved": list(getattr(entry, "moved", ())),
        "constructed": bool(entry.is_method or entry.init
                            or (len(parts) == 1 and not _is_function(entry))),
        "rebuild": None if rebuild is None else rebuild.plan(),
        "init": encode_keywords(entry.init), "weights": weights,
        "inputs": [{"name": name, "tensor": layout(x, spec)}
                   for name, x, spec in zip(names, inputs, entry.specs, strict=True)],
        "passed": encode_keywords(entry.passed),
        "object": None, "template": None, "template_kwargs": [],
        "copies_inputs": entry.copies_inputs,
    }
    if isinstance(entry.fn, ObjectCall):  # built from the first inputs, then its member
        out["object"] = {"init_names": list(entry.fn.init_names),
                         "init": encode_keywords(entry.fn.init), "member": entry.fn.member,
                         "property": entry.fn.is_property, "bare": entry.fn.bare,
                         "parts": [{"name": part.name, "module": part.owner.__module__,
                                    "qualname": part.owner.__qualname__,
                                    "init_names": list(part.init_names)}
                                   for part in entry.fn.parts]}
    if entry.template is not None:
        out["template"] = [_slot(slot) for slot in entry.template]
        out["template_kwargs"] = encode_keywords(entry.template_kwargs)
    return out


def _slot(slot: Any) -> dict[str, Any]:
    """A harvested call's argument: searched (None), a recorded tensor, or a value."""
    if slot is None:
        return {"searched": True}
    if isinstance(slot, torch.Tensor):
        dtype = str(slot.dtype).replace("torch.", "")
        spec = InputSpec(dtype, tuple(slot.shape), float(slot.min()) if slot.numel() else 0,
                         float(slot.max()) if slot.numel() else 0, "observed")
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
