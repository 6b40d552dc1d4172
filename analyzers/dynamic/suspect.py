"""The suspect loss: how far an op's operand is from the op's invalid domain.

The catalogue names the quantity (`suspect_loss`); this module turns each name into a
differentiable function of the operand whose value is <= 0 exactly when the op fails, so the
search can minimise it (GRIST's "suspect" quantity). `tests/test_dynamic.py` checks that every
risky op in the catalogue has one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from analyzers.catalogue import CATALOGUE, OpSpec
from analyzers.dtypes import limits

Loss = Callable[[torch.Tensor, str], torch.Tensor]


def _threshold(spec: OpSpec, dtype: str) -> float:
    return float(spec.thresholds.get(dtype, limits(dtype).exp_max))


def _nonpositive_integer_distance(x: torch.Tensor) -> torch.Tensor:
    """0 at 0, -1, -2, ...; the distance to the nearest of them elsewhere."""
    return torch.where(x > 0, x, (x - torch.round(x)).abs())


LOSSES: dict[str, Callable[[torch.Tensor, OpSpec, str], torch.Tensor]] = {
    "x": lambda x, spec, dt: x.amin(),
    "abs(x)": lambda x, spec, dt: x.abs().amin(),
    "x + 1": lambda x, spec, dt: (x + 1).amin(),
    "x - 1": lambda x, spec, dt: (x - 1).amin(),
    "1 - abs(x)": lambda x, spec, dt: (1 - x.abs()).amin(),
    "min(x, 1 - x)": lambda x, spec, dt: torch.minimum(x, 1 - x).amin(),
    "threshold - x": lambda x, spec, dt: (_threshold(spec, dt) - x).amin(),
    "threshold - abs(x)": lambda x, spec, dt: (_threshold(spec, dt) - x.abs()).amin(),
    "distance to the nearest non-positive integer":
        lambda x, spec, dt: _nonpositive_integer_distance(x).amin(),
    "abs(step)": lambda x, spec, dt: x.abs().amin(),
    "number of finite entries in the row":
        lambda x, spec, dt: torch.isfinite(x).sum(-1).amin().to(torch.float32),
}
# Not here yet (the op needs more than its one operand, or a non-numeric objective):
# atan2 (both arguments), cdist (pairwise distances), mvlgamma (its p), cross_entropy (the
# ignored targets), linalg (eigenvalue gaps). Findings on them stay static, and say so.


def suspect_loss(op: str, operand: torch.Tensor,
                 dtype: str = "float32") -> torch.Tensor | None:
    """A scalar; the op is at or past its invalid boundary when it is <= 0. None where the
    op has no objective yet: the search then relies on its gradient-free stages."""
    spec = CATALOGUE.by_op[op]
    fn = LOSSES.get(spec.suspect_loss)
    if fn is None:
        return None
    return fn(operand.to(torch.float64) if operand.is_floating_point() else
              operand.to(torch.float64), spec, dtype)


def has_loss(op: str) -> bool:
    return CATALOGUE.by_op[op].suspect_loss in LOSSES


def op_names(op: str) -> frozenset[str]:
    """The `__name__`s under which the op reaches `__torch_function__`."""
    spec = CATALOGUE.by_op[op]
    names = {q.rsplit(".", 1)[-1] for f, q in spec.qualnames() if f == "torch"}
    names.update(spec.methods)
    names.update(DUNDERS.get(op, ()))
    return frozenset(names)


DUNDERS = {
    "div": ("__rdiv__", "__rtruediv__", "__truediv__", "__floordiv__", "__rfloordiv__",
            "__itruediv__", "__idiv__", "div_", "floor_divide_"),
    "pow": ("__pow__", "__ipow__", "__rpow__"),
    "fmod": ("__mod__", "__rmod__"),
}
# For these the operand is the receiver, not the second argument.
RECEIVER_IS_OPERAND = frozenset({"__rdiv__", "__rtruediv__", "__rfloordiv__", "__rmod__"})


def operand_of(op: str, func_name: str, args: tuple[object, ...],
               kwargs: dict[str, object]) -> object | None:
    """The risky argument of one intercepted call."""
    spec = CATALOGUE.by_op[op]
    if func_name in RECEIVER_IS_OPERAND:
        return args[0] if args else None
    for key in spec.operand_keywords:
        if key in kwargs:
            return kwargs[key]
    index = spec.operand
    return args[index] if index < len(args) else None
