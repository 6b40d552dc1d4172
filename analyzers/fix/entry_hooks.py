"""The fix checks' callables for one candidate, in the process that runs the PR's code (the
sandbox's harness, and the tests): `entry_hooks` loads the patched copy of the module
(`load_patched`), points the finding's entry at it (`rebind`), and wraps calling it
(`run_entry`, `entry_gradients`), reproducing the trigger (`reproduce`) and re-running the
search on the patched lines (`search_hook`) as `validate.Hooks`. `sample_inputs` draws an
entry's normal inputs. Judging what the callables return is `validate.py`'s.
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.fix.validate import Hooks, patched_lines
from analyzers.fix.values import float_arrays, to_numpy

if TYPE_CHECKING:
    from analyzers.dynamic.entry import Entry
    from analyzers.dynamic.search import Budget
    from analyzers.fix.candidates import Candidate


def entry_hooks(
    candidate: Candidate,
    entry: Entry,
    *,
    path: str,
    module_name: str,
    trigger: Sequence[Any] | None,
    normal_inputs: Sequence[Sequence[Any]],
    directory: Path | None = None,
    budget: Budget | None = None,
    seed: int = 0,
    dtype: str = "float32",
    reproducer: Callable[[Path], tuple[bool, str]] | None = None,
    original_source: str | None = None,
    on_copy: Path | None = None,
) -> Hooks:
    """`Hooks` for one candidate of a finding confirmed on `entry`, in this process: the
    patched module is loaded from its own file, the entry rebound to it (same inputs, box and
    weights), and the search re-run with the same budget on the patched lines. `on_copy`, a
    copy of the repository with the candidate written in it, is where a script entry runs
    instead (`ScriptEntry.on_copy`). `reproducer` (patched file) -> (still fails, detail)
    replaces the in-process stand-in, e.g. with the rendered script run against a patched
    copy of the repository."""
    if on_copy is not None:
        file = on_copy / path
        patched = entry.on_copy(on_copy)  # type: ignore[attr-defined]
    else:
        module, file = load_patched(
            candidate.source,
            path,
            module_name,
            directory,
            extracted=getattr(entry, "loading", "") == "extracted",
        )
        patched = rebind(entry, module)
    if reproducer is not None:
        run_reproducer: Callable[[], tuple[bool, str]] = lambda: reproducer(file)  # noqa: E731
    elif trigger is not None:
        run_reproducer = lambda: reproduce(patched, trigger)  # noqa: E731
    else:
        run_reproducer = lambda: (True, "no trigger to reproduce")  # noqa: E731
    return Hooks(
        reproducer=run_reproducer,
        search=search_hook(
            patched,
            str(file),
            patched_lines(candidate),
            dtype=dtype,
            seed=seed,
            budget=budget,
            start=entry.start,
        ),
        original=lambda x: run_entry(entry, x),
        patched=lambda x: run_entry(patched, x),
        gradients=lambda x: entry_gradients(patched, x),
        original_gradients=lambda x: entry_gradients(entry, x),
        normal_inputs=normal_inputs,
        trigger=trigger,
        reference=float64_reference(entry),
        original_source=original_source,
    )


_LOADED = itertools.count()
PATCHED_SUFFIX = "__numcheck_fix_"  # patched modules: `<original>__numcheck_fix_<n>`


def load_patched(
    source: str, path: str, module_name: str, directory: Path | None = None, extracted: bool = False
) -> tuple[ModuleType, Path]:
    """Import a patched copy of one module from a file of its own (the probes watch it by
    file and line). It is named inside the original's package, so relative imports resolve
    against the real package. `extracted`: the original would not import and was built
    statement by statement (analyzers/dynamic/loading.py); so is the copy."""
    directory = directory or Path(tempfile.mkdtemp(prefix="numcheck_fix_"))
    file = directory / Path(path).name
    file.write_text(source, encoding="utf-8")
    package = module_name.rpartition(".")[0]
    name = f"{module_name}{PATCHED_SUFFIX}{next(_LOADED)}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[name] = module
    try:
        if extracted:
            from analyzers.dynamic.loading import define

            define(module, source, str(file))
        else:
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module, file


def rebind(entry: Entry, module: ModuleType) -> Entry:
    """The same entry (inputs, box, constants, weights) calling the patched module."""
    import torch

    from analyzers.dynamic.entries import resolve_attr
    from analyzers.dynamic.factories import FactoryCall
    from analyzers.dynamic.objects import ObjectCall

    qualname = entry.target.partition(":")[2]

    def like(old: torch.nn.Module, cls: Any) -> torch.nn.Module:
        instance = cls(**entry.init)
        params = list(old.parameters())
        if params:
            instance = instance.to(dtype=params[0].dtype)
        instance.load_state_dict(old.state_dict())
        instance.train(old.training)
        return instance.to(entry.device) if entry.device != "cpu" else instance

    replay: Any = entry.fn
    if isinstance(replay, FactoryCall):  # a closure a function returns: the patched function
        return replace(entry, fn=replay.with_factory(resolve_attr(module, qualname)))
    if isinstance(replay, ObjectCall):  # a member of a plain class: the patched class
        return replace(
            entry, fn=replay.with_owner(resolve_attr(module, qualname.rpartition(".")[0]))
        )
    if entry.is_method and hasattr(replay, "rebound"):
        # a recorded Keras layer method call (harvest_keras.KerasReplay): a layer of the
        # patched class, built like the recorded one, holding its variables
        return replace(entry, fn=replay.rebound(resolve_attr(module, qualname.rpartition(".")[0])))
    if entry.is_method and hasattr(replay, "module") and hasattr(replay, "method"):
        # a recorded nn.Module method call (harvest.ModuleReplay): the recorded module as the
        # tests left it, its classes from this file swapped for their patched versions
        patched = copy.deepcopy(replay.module)
        original = module.__name__.split(PATCHED_SUFFIX, 1)[0]
        for sub in patched.modules():
            if type(sub).__module__ == original:
                sub.__class__ = resolve_attr(module, type(sub).__qualname__)
        return replace(entry, fn=type(replay)(patched, replay.method, replay.fresh, replay.seed))
    if entry.is_method and entry.framework == "tensorflow":  # a synthesised Keras layer
        instance = resolve_attr(module, qualname.rpartition(".")[0])(**entry.init)
        return replace(entry, fn=_keras_clone(entry.fn, instance))
    if entry.is_method:  # a synthesised nn.Module method: a fresh instance, the same weights
        owner_name, _, method = qualname.rpartition(".")
        old = getattr(entry.fn, "__self__", None)
        if not isinstance(old, torch.nn.Module):
            raise TypeError(f"cannot rebind {entry.target}")
        return replace(entry, fn=getattr(like(old, resolve_attr(module, owner_name)), method))
    obj = resolve_attr(module, qualname)
    if isinstance(entry.fn, torch.nn.Module):
        return replace(entry, fn=like(entry.fn, obj))
    if entry.framework == "tensorflow" and not hasattr(entry.fn, "__code__"):
        instance = obj(**entry.init)  # a Keras layer or model: same weights once built
        return replace(entry, fn=_keras_clone(entry.fn, instance))
    return replace(entry, fn=obj)


def _keras_clone(old: Any, new: Any) -> Any:
    copied = [False]

    def call(*args: Any, **kwargs: Any) -> Any:
        if not copied[0]:
            new(*args, **kwargs)  # build
            new.set_weights(old.get_weights())
            copied[0] = True
        return new(*args, **kwargs)

    return call


def sample_inputs(
    entry: Entry, count: int, seed: int = 0, box: Sequence[tuple[float, float] | None] | None = None
) -> list[list[Any]]:
    """In-domain inputs: draws from the entry's box, or from `box` per input (None keeps
    the entry's). The harness passes harvested values where it has them."""
    import torch

    from analyzers.dynamic.tensors import sample

    generator = torch.Generator().manual_seed(seed)
    specs = list(entry.specs)
    if box is not None:
        specs = [
            replace(s, lo=b[0], hi=b[1]) if b is not None and s.is_float else s
            for s, b in zip(specs, box, strict=True)
        ]
    return [[sample(spec, generator) for spec in specs] for _ in range(count)]


def float64_reference(entry: Entry) -> Callable[[Sequence[Any]], Any] | None:
    """The original entry computed in float64 (`Entry.in_dtype`), or None where that cannot
    be done faithfully (TensorFlow, autocast, CUDA, recorded modules)."""
    from analyzers.dynamic.entry import cast_inputs

    if entry.autocast is not None or entry.framework != "torch":
        return None  # an autocast run's reference is not its float64 twin
    wide = entry.in_dtype("float64")
    if wide is None:
        return None
    return lambda inputs: wide.call(cast_inputs(inputs, "float64"))


def run_entry(entry: Entry, inputs: Sequence[Any]) -> Any:
    if entry.framework == "tensorflow":
        import tensorflow as tf

        return entry.call([tf.constant(to_numpy(x)) for x in inputs])
    return entry.call(list(inputs))


def entry_gradients(entry: Entry, inputs: Sequence[Any]) -> list[Any]:
    """d(sum of the finite float outputs) / d(each float input)."""
    if entry.framework == "tensorflow":
        import tensorflow as tf

        tensors = [tf.constant(to_numpy(x)) for x in inputs]
        with tf.GradientTape() as tape:
            for t in tensors:
                if t.dtype.is_floating:
                    tape.watch(t)
            output = entry.call(tensors)
            outs = [
                o
                for o in tf.nest.flatten(output)
                if isinstance(o, tf.Tensor) and o.dtype.is_floating
            ]
            total = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float64)) for o in outs])
        return list(tape.gradient(total, [t for t in tensors if t.dtype.is_floating]))
    import torch

    from analyzers.dynamic.probe import tensors_in

    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    output = entry.differentiable_outputs(entry.call(leaves))
    outs = [o for o in tensors_in(output) if o.is_floating_point() and o.requires_grad]
    floats = [x for x in leaves if x.requires_grad]
    if not outs or not floats:
        return []
    total = torch.stack([o.sum().to(torch.float64) for o in outs]).sum()
    return list(torch.autograd.grad(total, floats, allow_unused=True))


def reproduce(entry: Entry, trigger: Sequence[Any]) -> tuple[bool, str]:
    """In-process stand-in for the reproducer script: (still fails, detail). It fails when
    an output, or the gradient of the outputs, is not finite at the trigger."""
    outputs = float_arrays(run_entry(entry, trigger))
    if not all(np.isfinite(a).all() for a in outputs):
        return True, "the output is not finite at the trigger"
    grads = entry_gradients(entry, trigger)
    for index, grad in enumerate(grads):
        if grad is not None and not all(np.isfinite(a).all() for a in float_arrays(grad)):
            return True, f"the gradient w.r.t. input {index} is not finite at the trigger"
    return False, "finite output and gradient at the trigger"


def search_hook(
    entry: Entry,
    path: str,
    lines: frozenset[int],
    *,
    dtype: str = "float32",
    seed: int = 0,
    budget: Budget | None = None,
    start: list[Any] | None = None,
) -> Callable[[str], dict[str, Any]]:
    """`Hooks.search` for an entry on the patched copy: the real Searcher, per op."""
    from analyzers.dynamic.search import Searcher

    def run(op: str) -> dict[str, Any]:
        searcher = Searcher(entry, path, lines, op, dtype=dtype, seed=seed, budget=budget)
        outcome = searcher.run(start)
        return {
            "triggered": outcome.triggered,
            "reached": outcome.reached,
            "where": outcome.where,
            "stage": outcome.stage,
            "evaluations": outcome.evaluations,
            "seconds": round(outcome.seconds, 4),
            "best_loss": outcome.best_loss,
            "error": outcome.error,
        }

    return run
