"""NumPy for the dynamic pass: watch an op at a source line, evaluate an entry.

Deep-learning repositories keep real numerics in NumPy: noise schedules (`np.log(sigmas)`),
metrics, data pipelines. NumPy has no dispatch mode to hook and its array type is built in,
so the searched inputs cross into NumPy as `Watched` arrays, a plain subclass of `ndarray`
whose operators can be wrapped, and the catalogue's NumPy functions (`numpy.log`, ...) are
wrapped for the time of one evaluation, as the JAX probe does (owners.patch_op). What the
code computes from an input stays `Watched` (ufuncs keep the subclass); values it makes from
constants alone are plain arrays and are not watched at their operators.

NumPy code does not train, so only the forward failure counts, and the search is
gradient-free (the suspect loss is computed from the recorded operand in torch). NumPy does
not return NaN/Inf silently at the op: it raises the floating-point flag of the ufunc
(divide, invalid, overflow). The reproducer turns those flags into errors
(`np.errstate(... "raise")`) and fails when the first one is raised at the flagged line, or
when the output is NaN/Inf; so a trigger shows ("raised") only when the first flag of the run
is the flagged line's, which the evaluation records with `np.errstate(... "call")`. For the
same reason a run that raises an exception after the op still counts: raised, the op's flag
stops the reproducer first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from analyzers.dynamic.evaluation import Evaluation, guidance, keeps_rows
from analyzers.dynamic.owners import patch_op, restore
from analyzers.dynamic.probe import Hit, LineWatch
from analyzers.dynamic.raised import failed
from analyzers.dynamic.suspect import CallSite, call_site


class Entry(Protocol):
    """What this module needs of entry.Entry (not imported: entry.py imports this module
    lazily for its NumPy calls)."""

    def call_arrays(self, arrays: list[Any]) -> Any: ...


class Watched(np.ndarray):
    """A searched input inside the code: an ndarray whose operators the probe can wrap."""


@dataclass
class NumpyHit:
    operand: Any
    output: Any
    call: CallSite = field(default_factory=CallSite)


def to_numpy(x: torch.Tensor) -> Watched:
    """A searched input as a watched array of the same dtype (a copy: the code may write
    into it)."""
    return np.array(x.detach().cpu().numpy()).view(Watched)


def plain(value: Any) -> Any:
    """Watched arrays back as plain ones, through tuples, lists and dicts."""
    if isinstance(value, Watched):
        return value.view(np.ndarray)
    if isinstance(value, tuple | list):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _floating(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.floating) and np.issubdtype(
        np.asarray(value).dtype, np.floating
    )


def finite(value: Any) -> bool:
    """Every float array or scalar in a value as code returns it is free of NaN/Inf."""
    if isinstance(value, tuple | list):
        return all(finite(v) for v in value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, float):
        return math.isfinite(value)
    return not _floating(value) or bool(np.isfinite(np.asarray(value)).all())


def to_torch(value: Any) -> Any:
    """An array as a torch tensor (anything else unchanged)."""
    if isinstance(value, np.ndarray | np.generic) and np.asarray(value).dtype.kind in "fiub":
        return torch.from_numpy(np.array(value))
    return value


class FirstFlag:
    """Where the run raised its first floating-point flag: on a watched line, elsewhere, or
    nowhere (None), the way the reproducer's `np.errstate(... "raise")` would see it. Called
    by NumPy (`np.errstate(call=...)`): the frames above are the code that raised it."""

    def __init__(self, path: str, lines: frozenset[int]) -> None:
        self.watch = LineWatch(path, lines)
        self.on_line: bool | None = None

    def __call__(self, kind: str, flag: int) -> None:
        if self.on_line is None:
            self.on_line = self.watch.caller_on_line()


@dataclass
class NumpyProbe:
    path: str
    lines: frozenset[int]
    op: str
    hits: list[NumpyHit] = field(default_factory=list)
    _patched: list[tuple[Any, str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.watch = LineWatch(self.path, self.lines)

    def _wrap(self, original: Callable[..., Any], operand_at: int, name: str) -> Callable[..., Any]:
        probe = self

        def watched(*args: Any, **kwargs: Any) -> Any:
            operand = args[operand_at] if operand_at < len(args) else None
            if (
                not isinstance(operand, np.ndarray | np.generic | float | int)
                or not probe.watch.caller_on_line()
            ):
                return original(*args, **kwargs)
            out = original(*args, **kwargs)
            probe.hits.append(
                NumpyHit(np.asarray(operand), out, call_site(probe.op, name, args, kwargs, operand))
            )
            return out

        return watched

    def __enter__(self) -> NumpyProbe:
        self._patched = patch_op(self.op, ("numpy",), Watched, self._wrap)
        return self

    def __exit__(self, *exc: object) -> None:
        restore(self._patched)


def _torch_hit(hit: NumpyHit) -> Hit:
    from dataclasses import replace

    return Hit(
        hit.call.func_name,
        to_torch(hit.operand),
        to_torch(hit.output),
        replace(hit.call, others=tuple(to_torch(o) for o in hit.call.others)),
    )


def evaluate_numpy(
    probe: NumpyProbe,
    entry: Entry,
    op: str,
    dtype: str,
    inputs: list[torch.Tensor],
    chunks: int = 1,
) -> Evaluation:
    """One run of a NumPy entry under the probe, its floating-point flags recorded;
    gradient-free: `grads` stays empty, and only forward failures count."""
    probe.hits.clear()
    first = FirstFlag(probe.path, probe.lines)
    arrays = [to_numpy(x) for x in inputs]
    output: Any = None
    raised = False
    try:
        with np.errstate(divide="call", over="call", invalid="call", call=first), probe:
            output = plain(entry.call_arrays(arrays))
    except Exception as exc:  # the PR's code may raise on any input
        if not probe.hits:
            return failed(exc, probe.watch, op)
        # past the op: its flag, raised in the reproducer, stops the run before this error
        raised = True
    kept = (
        not raised
        and bool(inputs)
        and inputs[0].dim() >= 1
        and keeps_rows(to_torch(output), inputs[0].shape[0])
    )
    if not probe.hits:
        return Evaluation(batch_kept=kept)
    result = Evaluation(reached=True, batch_kept=kept)
    guiding: list[Hit] = []
    for hit in probe.hits:
        # `rest` holds every other argument, the objective's `others` among them
        operand_ok = finite(hit.operand) and finite(hit.call.rest)
        if operand_ok and not finite(hit.output):
            result.forward = True
        if operand_ok and _floating(hit.operand):
            guiding.append(_torch_hit(hit))
    result.loss, result.chunk_losses = guidance(op, dtype, guiding, chunks)
    if result.forward and first.on_line:  # the reproducer's first raised flag is the op's
        result.visible = "output" if not raised and not finite(output) else "raised"
    result.reaches_output = result.visible is not None
    return result
