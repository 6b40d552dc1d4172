"""Where NaN/Inf first appears when the trigger runs: the op, and the user's line calling it.

The flagged op is where the search aimed, but the first non-finite value may come from a
library function called on that line (F.normalize, a loss) or from another op on the way;
the comment should name the first one. PyTorch here: every op passes `__torch_function__`;
TensorFlow 2 (eager) in localise_tf.py, through TensorFlow's op callbacks.

Forward failures: the trigger is replayed watching every op, and the first call that makes a
NaN from NaN-free inputs (or an infinity from finite ones) is named.

Backward failures (sqrt at 0, acos at ±1, a norm of a zero vector): the forward is replayed
with gradients on, every autograd node an op creates is labelled with that op and the user's
line, and autograd's own node hooks watch the backward pass: the first node, in the order
autograd runs them, that turns finite incoming gradients into a non-finite one is named,
with the forward op that created it. Nodes an op creates internally (the inside of
`F.normalize`, of a library helper that handles `__torch_function__` itself) carry the label
of the op they belong to. The result also says whether the non-finite gradient reaches the
entry's inputs and parameters.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from analyzers.dynamic.entry import Entry
from analyzers.dynamic.frames import MAX_NAMED, UserFrames, input_names
from analyzers.dynamic.probe import tensors_in


def _finite(values: Sequence[torch.Tensor | None]) -> bool:
    return all(
        bool(torch.isfinite(t).all())
        for t in values
        if t is not None and (t.is_floating_point() or t.is_complex())
    )


def _any_nan(values: list[torch.Tensor]) -> bool:
    return any(
        bool(torch.isnan(t).any()) for t in values if t.is_floating_point() or t.is_complex()
    )


def _writes_infinity(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """`masked_fill(mask, float("-inf"))` puts the infinity there on purpose."""
    scalars = [a for a in (*args, *kwargs.values()) if isinstance(a, float)]
    return any(a in (float("inf"), float("-inf")) for a in scalars)


def _op_name(func: Any) -> str:
    return str(getattr(func, "__name__", str(func)))


# Ops that hand back uninitialised memory, which may hold any bits, NaN included, until the
# code fills it (pyro's stable sampler: `alpha.new_empty(shape).uniform_(-pi / 2, pi / 2)`):
# they make no value, so they are never where a NaN was made.
UNINITIALISED = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
)


class FirstNonFinite(TorchFunctionMode):
    """Remembers the first call that makes a NaN from NaN-free inputs, or an infinity from
    finite ones (an -inf mask going into softmax is not yet a failure; the NaN out of it is)."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = os.path.realpath(root)
        self._frames = UserFrames(root)
        self.found: dict[str, Any] | None = None

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if (
            self.found is None
            and not _writes_infinity(args, kwargs)
            and _op_name(func) not in UNINITIALISED
        ):
            inputs = tensors_in(args) + tensors_in(kwargs)
            outputs = tensors_in(out)
            made_nan = not _any_nan(inputs) and _any_nan(outputs)
            if made_nan or (_finite(inputs) and not _finite(outputs)):
                where = self._frames.find(1)
                self.found = {
                    "op": _op_name(func),
                    "path": where[0] if where else None,
                    "line": where[1] if where else None,
                    "where": "forward",
                }
        return out


class NodeLabels(TorchFunctionMode):
    """Labels every autograd node an op's outputs carry with the op and the user's line."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self._frames = UserFrames(root)
        self.labels: dict[Any, dict[str, Any]] = {}  # autograd Node -> label

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        nodes = [t.grad_fn for t in tensors_in(out) if t.grad_fn is not None]
        fresh = [n for n in nodes if n not in self.labels]
        if fresh:
            where = self._frames.find(1)
            label = {
                "op": _op_name(func),
                "path": where[0] if where else None,
                "line": where[1] if where else None,
            }
            for node in fresh:
                self.labels[node] = label
        return out


def _graph(
    roots: list[Any], labels: dict[Any, dict[str, Any]]
) -> tuple[dict[Any, dict[str, Any] | None], list[torch.Tensor]]:
    """Every node reachable from the roots with its label (an unlabelled node inherits the
    label of the node that first reached it: it was made inside that op), and the leaves."""
    seen: dict[Any, dict[str, Any] | None] = {}
    leaves: list[torch.Tensor] = []
    queue: list[tuple[Any, dict[str, Any] | None]] = [(r, labels.get(r)) for r in roots]
    while queue:
        node, inherited = queue.pop(0)
        if node is None or node in seen:
            continue
        label = labels.get(node, inherited)
        seen[node] = label
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        queue.extend((child, label) for child, _ in node.next_functions)
    return seen, leaves


def _parameter_names(entry: Entry) -> dict[int, str]:
    """id(parameter) -> its name, for every module the entry calls into."""
    modules = [
        entry.fn,
        getattr(entry.fn, "__self__", None),
        getattr(entry.fn, "last_module", None),
    ]
    names: dict[int, str] = {}
    for module in modules:
        if isinstance(module, torch.nn.Module):
            for name, parameter in module.named_parameters():
                names.setdefault(id(parameter), name)
    return names


def _backward(entry: Entry, inputs: Sequence[torch.Tensor], repo: str) -> dict[str, Any] | None:
    labels = NodeLabels(repo)
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    with torch.enable_grad():
        try:
            with labels:
                out = entry.call(leaves)
        except Exception:  # the trigger may make the code raise: nothing more to say then
            return None
        outputs = [t for t in tensors_in(out) if t.is_floating_point() and t.requires_grad]
        chosen = [t for t in outputs if _finite([t])] or outputs  # as the search sums them
        if not chosen:
            return None
        total = chosen[0].sum()
        for t in chosen[1:]:
            total = total + t.sum()
        nodes, variables = _graph([total.grad_fn], labels.labels)
        culprit: list[Any] = []

        def watch(node: Any) -> Any:
            def hook(
                grad_inputs: tuple[torch.Tensor | None, ...],
                grad_outputs: tuple[torch.Tensor | None, ...],
            ) -> None:
                if not culprit and _finite(grad_outputs) and not _finite(grad_inputs):
                    culprit.append(node)

            return hook

        handles = [
            node.register_hook(watch(node)) for node in nodes if not hasattr(node, "variable")
        ]
        try:
            grads = torch.autograd.grad(total, variables, allow_unused=True) if variables else ()
        except RuntimeError:
            return None
        finally:
            for handle in handles:
                handle.remove()
    if not culprit:
        return None
    node = culprit[0]
    label = nodes.get(node) or {"op": node.name(), "path": None, "line": None}
    index = {id(x): i for i, x in enumerate(leaves)}
    names = input_names(entry, len(leaves))
    parameter_names = _parameter_names(entry)
    bad_inputs: list[str] = []
    bad_parameters: list[str] = []
    for variable, grad in zip(variables, grads, strict=True):
        if grad is None or _finite([grad]):
            continue
        if id(variable) in index:
            bad_inputs.append(names[index[id(variable)]])
        else:
            bad_parameters.append(
                parameter_names.get(id(variable), f"<tensor {list(variable.shape)}>")
            )
    return {
        **label,
        "where": "backward",
        "node": node.name(),
        "reaches_inputs": bool(bad_inputs),
        "inputs": bad_inputs[:MAX_NAMED],
        "reaches_parameters": bool(bad_parameters),
        "parameters": sorted(bad_parameters)[:MAX_NAMED],
    }


def localise(
    entry: Entry, inputs: Sequence[torch.Tensor], repo: str, where: str = "forward"
) -> dict[str, Any] | None:
    """Run the trigger once more, watching every op. Forward: the first op that made a
    NaN/Inf, or None when the forward stays finite. `where="backward"` (the search saw the
    failure in the gradient): a forward NaN/Inf still comes first when there is one; else the
    first backward node that made a non-finite gradient from finite ones, named by the
    forward op that created it. TensorFlow entries are localised by localise_tf (op
    callbacks); None for other frameworks."""
    if entry.framework == "tensorflow":
        from analyzers.dynamic.localise_tf import localise_tf

        return localise_tf(entry, inputs, repo, where)
    if entry.framework != "torch":
        return None
    mode = FirstNonFinite(repo)
    leaves = [x.detach().clone() for x in inputs]
    try:
        with mode, torch.no_grad():
            entry.call(leaves)
    except Exception:  # the trigger may make the code raise: nothing more to say then
        return mode.found
    if mode.found is not None or where != "backward":
        return mode.found
    return _backward(entry, inputs, repo)
