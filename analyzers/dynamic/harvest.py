"""Harvested entries: calls recorded while the repository's own tests run.

Before pytest imports anything, each function (or method) enclosing a finding is wrapped so
that its first calls are recorded: the arguments (tensors cloned), the module instance for a
method. A recorded call is the best entry there is: real shapes, real dtypes, real module state,
and values that say what range an input lives in. Runs only inside the sandboxed harness.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import inspect
import io
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from analyzers.dynamic.entries import Entry, module_name_for
from analyzers.dynamic.specs import InputSpec

CALLS_KEPT = 3


@dataclass
class Recorded:
    """One call: positional and keyword arguments, with tensors cloned."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    owner: Any = None  # `self` for a method


@dataclass
class Harvest:
    calls: dict[str, list[Recorded]] = field(default_factory=dict)  # "module:qualname" -> calls
    ran: bool = False
    note: str = ""


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list | tuple):
        return type(value)(_clone(v) for v in value)
    return value


def _wrap(store: list[Recorded], original: Any, is_method: bool) -> Any:
    @functools.wraps(original)
    def recording(*args: Any, **kwargs: Any) -> Any:
        if len(store) < CALLS_KEPT:
            owner = None
            rest = args
            if is_method and args:
                with contextlib.suppress(Exception):
                    owner = copy.deepcopy(args[0])
                rest = args[1:]
            store.append(Recorded(tuple(_clone(a) for a in rest),
                                  {k: _clone(v) for k, v in kwargs.items()}, owner))
        return original(*args, **kwargs)

    return recording


def harvest(repo: Path, targets: list[tuple[str, str]], seconds: float) -> Harvest:
    """Run the repository's tests once with every (path, function) target wrapped."""
    result = Harvest()
    tests = [p for p in ("tests", "test") if (repo / p).is_dir()] or [
        str(p.relative_to(repo)) for p in repo.rglob("test_*.py")][:50]
    if not tests:
        result.note = "no tests found"
        return result
    patched: list[tuple[Any, str, Any]] = []
    root = str(repo.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    for path, function in targets:
        key = f"{module_name_for(path)}:{function}"
        if key in result.calls or "<" in function:
            continue
        try:
            module = importlib.import_module(module_name_for(path))
            owner: Any = module
            parts = function.split(".")
            for part in parts[:-1]:
                owner = getattr(owner, part)
            original = inspect.getattr_static(owner, parts[-1])
        except Exception:  # an import that fails is reported by the entry that needs it
            continue
        store: list[Recorded] = []
        result.calls[key] = store
        is_method = inspect.isclass(owner) and not isinstance(original, staticmethod | classmethod)
        function_obj = original.__func__ if isinstance(original, staticmethod) else original
        if not callable(function_obj):
            continue
        setattr(owner, parts[-1], _wrap(store, function_obj, is_method))
        patched.append((owner, parts[-1], original))
    try:
        result.ran = _run_pytest(repo, tests, seconds)
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)
    return result


def _run_pytest(repo: Path, tests: list[str], seconds: float) -> bool:
    try:
        import pytest
    except ImportError:
        return False

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("harvesting the tests ran out of time")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(
                io.StringIO()):
            pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir",
                         str(repo), *tests])
    except TimeoutError:
        pass  # whatever was recorded before the limit is still good
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return True


def observed_box(values: torch.Tensor) -> tuple[float, float]:
    """The range a harvested input may take: what the tests showed, widened tenfold while
    keeping the shape of the range (probabilities stay in [0, 1], non-negatives >= 0)."""
    flat = values.detach().double().reshape(-1)
    if flat.numel() == 0:
        return -1.0, 1.0
    lo, hi = float(flat.min()), float(flat.max())
    if lo >= 0.0 and hi <= 1.0:
        return 0.0, 1.0
    magnitude = max(abs(lo), abs(hi), 1.0) * 10.0
    if lo >= 0.0:
        return 0.0, magnitude
    return -magnitude, magnitude


REPLAYABLE = (int, float, bool, str, type(None))


def entry_from_call(key: str, call: Recorded, fn: Any) -> Entry:
    """Searched inputs are the call's float tensors; the other arguments are replayed as
    recorded. Only plain functions whose other arguments a script can spell (numbers,
    strings, integer tensors) qualify: the reproducer must stand alone."""
    if call.owner is not None:
        raise ValueError("recorded method calls need the test's module state")
    specs: list[InputSpec] = []
    template: list[Any] = []
    for value in call.args:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            lo, hi = observed_box(value)
            dtype = str(value.dtype).replace("torch.", "")
            specs.append(InputSpec(dtype, tuple(value.shape), lo, hi, "observed"))
            template.append(None)
        elif isinstance(value, (torch.Tensor, *REPLAYABLE)):
            template.append(value)
        else:
            raise ValueError(f"cannot replay an argument of type {type(value).__name__}")
    if not all(isinstance(v, REPLAYABLE) for v in call.kwargs.values()):
        raise ValueError("cannot replay the keyword arguments")
    if not specs:
        raise ValueError("the recorded call has no float tensor arguments")
    start = [a for a in call.args if isinstance(a, torch.Tensor) and a.is_floating_point()]
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names = [params[i] for i, slot in enumerate(template) if slot is None and i < len(params)]
    return Entry(key, specs, fn, "harvested", template=template,
                 template_kwargs=dict(call.kwargs), start=start,
                 param_names=names if len(names) == len(specs) else [])
