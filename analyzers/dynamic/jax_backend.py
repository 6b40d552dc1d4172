"""JAX (CPU) for the dynamic pass: watch an op at a source line, evaluate an entry.

Like TensorFlow, JAX has no dispatch mode to hook, so the probe wraps the op's catalogue
functions (`jax.numpy.log`, `jax.nn.softmax`, ...) and `jax.Array`'s operators for the time of
one evaluation. The entry runs under `jax.disable_jit()`: a `@jax.jit` function would
otherwise run traced, with no concrete operand to inspect at the flagged line.
Inputs stay torch tensors in the searcher and cross into JAX here. The search is gradient-free
for JAX entries (no `grads`): the suspect loss is computed from the recorded operand in torch
(suspect.py), which guides the searcher's sampling, snapping and evolution stages.
"""

from __future__ import annotations

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
    lazily for its JAX calls)."""

    def call_arrays(self, arrays: list[Any]) -> Any: ...


@dataclass
class JaxHit:
    operand: Any
    output: Any
    derivative_fails: bool
    call: CallSite = field(default_factory=CallSite)


def to_jax(x: torch.Tensor) -> Any:
    """A searched input as a jnp array of the same dtype."""
    import jax.numpy as jnp

    return jnp.asarray(x.detach().cpu().numpy())


def to_torch(value: Any) -> Any:
    """A jax array as a torch tensor (anything else unchanged)."""
    if _is_array(value):
        return torch.from_numpy(np.array(value))
    return value


def _is_array(value: Any) -> bool:
    import jax

    return isinstance(value, jax.Array)


def _number(value: Any) -> bool:
    """A plain Python number (not a bool), as a JAX operator's operand may be: the divisor
    of `inputs / keep_prob` where `keep_prob = 1.0 - self.rate`."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _floating(value: Any) -> bool:
    return _is_array(value) and np.issubdtype(np.dtype(value.dtype), np.floating)


def finite(value: Any) -> bool:
    """Every float array in a pytree is free of NaN/Inf."""
    import jax

    return all(
        bool(np.isfinite(np.asarray(leaf)).all())
        for leaf in jax.tree_util.tree_leaves(value)
        if _floating(leaf)
    )


def _derivative_fails(
    original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], index: int
) -> bool:
    """Is the op's own derivative with respect to its operand non-finite (the `jnp.where`
    leak: a finite masked output whose backward pass is NaN)?"""
    import jax
    import jax.numpy as jnp

    operand = args[index]

    def local(v: Any) -> Any:
        out = original(*args[:index], v, *args[index + 1 :], **kwargs)
        return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(out) if _floating(leaf))

    try:
        return not finite(jax.grad(local)(operand))
    except Exception:  # an op JAX cannot differentiate here: no verdict
        return False


@dataclass
class JaxProbe:
    path: str
    lines: frozenset[int]
    op: str
    hits: list[JaxHit] = field(default_factory=list)
    _patched: list[tuple[Any, str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.watch = LineWatch(self.path, self.lines)

    def _wrap(self, original: Callable[..., Any], operand_at: int, name: str) -> Callable[..., Any]:
        probe = self

        def watched(*args: Any, **kwargs: Any) -> Any:
            operand = args[operand_at] if operand_at < len(args) else None
            if not (_is_array(operand) or _number(operand)) or not probe.watch.caller_on_line():
                return original(*args, **kwargs)
            out = original(*args, **kwargs)
            if _number(operand):  # `x / keep_prob`, a Python float: judged as a 0-d array
                import jax.numpy as jnp

                operand = jnp.asarray(operand, dtype=jnp.result_type(float))
                args = (*args[:operand_at], operand, *args[operand_at + 1 :])
            call = call_site(probe.op, name, args, kwargs, operand)
            fails = (
                _floating(operand)
                and finite(operand)
                and finite(call.rest)
                and finite(out)
                and _derivative_fails(original, args, kwargs, operand_at)
            )
            probe.hits.append(JaxHit(operand, out, fails, call))
            return out

        return watched

    def __enter__(self) -> JaxProbe:
        import jax

        array_type = type(jax.numpy.zeros(1))  # ArrayImpl: where the operators live
        self._patched = patch_op(self.op, ("jax",), array_type, self._wrap)
        return self

    def __exit__(self, *exc: object) -> None:
        restore(self._patched)


def _torch_hit(hit: JaxHit) -> Hit:
    from dataclasses import replace

    return Hit(
        hit.call.func_name,
        to_torch(hit.operand),
        to_torch(hit.output),
        replace(hit.call, others=tuple(to_torch(o) for o in hit.call.others)),
    )


def _gradient_fails(entry: Entry, arrays: list[Any]) -> bool:
    """Does the backward pass of the outputs' sum make an input's gradient NaN/Inf (what
    the reproducer checks when the output stays finite)?"""
    import jax
    import jax.numpy as jnp

    floats = [i for i, a in enumerate(arrays) if _floating(a)]
    if not floats:
        return False

    def total(*chosen: Any) -> Any:
        args = list(arrays)
        for i, value in zip(floats, chosen, strict=True):
            args[i] = value
        out = entry.call_arrays(args)
        return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(out) if _floating(leaf))

    try:
        grads = jax.grad(total, argnums=tuple(range(len(floats))))(*[arrays[i] for i in floats])
    except Exception:  # an entry JAX cannot differentiate: the gradient shows nothing
        return False
    return not finite(grads)


def evaluate_jax(
    probe: JaxProbe, entry: Entry, op: str, dtype: str, inputs: list[torch.Tensor], chunks: int = 1
) -> Evaluation:
    """One run of a JAX entry under the probe (jit disabled), with the local-derivative
    check; gradient-free: `grads` stays empty."""
    import jax

    probe.hits.clear()
    arrays = [to_jax(x) for x in inputs]
    try:
        with jax.disable_jit(), probe:
            output = entry.call_arrays(arrays)
    except Exception as exc:  # the PR's code may raise on any input
        return failed(exc, probe.watch, op)
    kept = (
        bool(inputs) and inputs[0].dim() >= 1 and keeps_rows(to_torch(output), inputs[0].shape[0])
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
        elif operand_ok and hit.derivative_fails:
            result.backward = True
        if operand_ok and _floating(hit.operand):
            guiding.append(_torch_hit(hit))
    result.loss, result.chunk_losses = guidance(op, dtype, guiding, chunks)
    if result.forward or result.backward:
        if not finite(output):
            result.visible = "output"
        else:
            with jax.disable_jit():
                if _gradient_fails(entry, arrays):
                    result.visible = "gradient"
        result.reaches_output = result.visible is not None
    return result
