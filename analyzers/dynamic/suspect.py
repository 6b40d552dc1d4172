"""The suspect loss: how far an op's operand is from the op's invalid domain.

The catalogue names the quantity (`suspect_loss`); this module turns each name into a
differentiable function of the operand whose value is <= 0 exactly when the op fails, so the
search can minimise it (GRIST's "suspect" quantity). `tests/test_dynamic.py` checks that every
risky op in the catalogue has one.

Most objectives read the operand alone. A few need the rest of the call, which the probes
record as a `CallSite` (`call_site`): atan2 its second argument (both near the origin),
cdist / pairwise_distance the second point set, mvlgamma its `p`, cross_entropy / nll_loss the
targets, `ignore_index`, `weight` and `reduction`, and the linear-algebra family the function
(a gap between eigenvalues for eigh/svd, the distance to singularity for inv/solve/det, the
smallest eigenvalue for cholesky).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

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
    "distance to the nearest non-positive integer": lambda x, spec, dt: (
        _nonpositive_integer_distance(x).amin()
    ),
    "abs(step)": lambda x, spec, dt: x.abs().amin(),
    "number of finite entries in the row": lambda x, spec, dt: (
        torch.isfinite(x).sum(-1).amin().to(torch.float32)
    ),
}


@dataclass(frozen=True)
class CallSite:
    """What an objective needs of a call beyond its operand: the function's name, the other
    tensor arguments it compares the operand with (aligned with the operand along dim 0 where
    they have one), and plain parameters."""

    func_name: str = ""
    others: tuple[Any, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    # every other argument of the call, flattened: an op handed a NaN/Inf there (a numerator
    # made NaN on an earlier line) only passes it on, which proves nothing about this op
    rest: tuple[Any, ...] = ()


def _arg(
    args: tuple[object, ...],
    kwargs: Mapping[str, object],
    index: int,
    *names: str,
    default: object = None,
) -> object:
    for name in names:
        if name in kwargs:
            return kwargs[name]
    return args[index] if index < len(args) else default


def call_site(
    op: str,
    func_name: str,
    args: tuple[object, ...],
    kwargs: Mapping[str, object],
    operand: object = None,
) -> CallSite:
    """The parts of one intercepted call (torch, TensorFlow, JAX or NumPy) the op's objective
    reads, and the call's arguments but `operand` (`CallSite.rest`)."""
    rest = tuple(value for value in _flattened((args, kwargs)) if value is not operand)
    return replace(_objective_parts(op, func_name, args, kwargs), rest=rest)


def _flattened(value: object) -> list[object]:
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in _flattened(item)]
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _flattened(item)]
    return [value]


def _objective_parts(
    op: str, func_name: str, args: tuple[object, ...], kwargs: Mapping[str, object]
) -> CallSite:
    if op == "atan2":  # torch.atan2(input, other), Tensor.atan2(other), tf.math.atan2(y, x)
        other = _arg(args, kwargs, 1, "other", "x", "x2")
        return CallSite(func_name, (other,) if other is not None else ())
    if op == "cdist":
        if func_name in ("pdist",):
            return CallSite(func_name)
        other = _arg(args, kwargs, 1, "x2")
        return CallSite(func_name, (other,) if other is not None else ())
    if op == "mvlgamma":
        return CallSite(func_name, params={"p": _arg(args, kwargs, 1, "p", "d", default=1)})
    if op == "cross_entropy":
        target = _arg(args, kwargs, 1, "target", "labels")
        params = {
            "weight": _arg(args, kwargs, 2, "weight"),
            "ignore_index": _arg(args, kwargs, 4, "ignore_index", default=-100),
            "reduction": _arg(args, kwargs, 6, "reduction", default="mean"),
            "reduce": _arg(args, kwargs, 5, "reduce"),
            "size_average": _arg(args, kwargs, 3, "size_average"),
        }
        return CallSite(func_name, (target,) if target is not None else (), params)
    return CallSite(func_name)


def _float64(x: Any) -> torch.Tensor | None:
    if not isinstance(x, torch.Tensor) or not (x.is_floating_point() or x.is_complex()):
        return None
    return x.to(torch.float64) if x.is_floating_point() else x


def _atan2(y: torch.Tensor, spec: OpSpec, dt: str, call: CallSite) -> torch.Tensor:
    """|y| + |x|: the L1 distance of the worst element from the origin (0 there)."""
    x = _float64(call.others[0]) if call.others else None
    if x is None:
        return y.abs().amin()
    return (y.abs() + x.abs()).amin()


def _points(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1]) if x.dim() >= 1 else x.reshape(1, 1)


def _cdist(x1: torch.Tensor, spec: OpSpec, dt: str, call: CallSite) -> torch.Tensor:
    """The smallest squared distance between two points (squared: no sqrt of its own whose
    gradient would fail at 0)."""
    x2 = _float64(call.others[0]) if call.others else None
    if call.func_name == "pairwise_distance" and x2 is not None:
        return ((x1 - x2) ** 2).sum(-1).amin() if x1.dim() else ((x1 - x2) ** 2).amin()
    if x2 is not None and x1.dim() >= 2:  # cdist: [..., P, M] against [..., R, M]
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        return (diff**2).sum(-1).amin()
    points = _points(x1)  # pdist (or one point set): distinct pairs within the rows
    if points.shape[0] < 2:
        return (points**2).sum(-1).amin()
    i, j = torch.triu_indices(points.shape[0], points.shape[0], offset=1, device=points.device)
    return ((points[i] - points[j]) ** 2).sum(-1).amin()


def _mvlgamma(x: torch.Tensor, spec: OpSpec, dt: str, call: CallSite) -> torch.Tensor:
    p = call.params.get("p", 1)
    p = int(p) if isinstance(p, int | float) else 1
    return (x - (p - 1) / 2).amin()


def _non_ignored(x: torch.Tensor, spec: OpSpec, dt: str, call: CallSite) -> torch.Tensor | None:
    """Mean reduction divides by the (weighted) number of targets not equal to ignore_index;
    0 of them is 0/0. A count: no gradient, but the evolutionary stage ranks by it."""
    params = call.params
    if (
        params.get("reduction", "mean") != "mean"
        or params.get("reduce") is False
        or params.get("size_average") is False
    ):
        return None
    target = call.others[0] if call.others else None
    if not isinstance(target, torch.Tensor) or target.is_floating_point():
        return None  # probability targets ignore nothing
    kept = (target != int(params.get("ignore_index", -100))).to(torch.float64)
    weight = params.get("weight")
    if isinstance(weight, torch.Tensor):
        kept = (
            kept
            * weight.to(torch.float64, copy=False)[
                target.clamp(0, weight.numel() - 1).to(weight.device)
            ]
        )
    return kept.sum()


def _linalg(a: torch.Tensor, spec: OpSpec, dt: str, call: CallSite) -> torch.Tensor | None:
    """Distance to where the decomposition breaks, less what rounding in the dtype blurs
    (n * eps * the matrix's scale): the smallest gap between eigen/singular values for
    eigh/svd (their gradients divide by the gaps), the smallest eigenvalue of the symmetric
    part for cholesky, the smallest singular value for inv/solve/det/logdet."""
    if a.dim() < 2 or a.shape[-1] == 0 or a.is_complex():
        return None
    square = a.shape[-2] == a.shape[-1]
    n = a.shape[-1]
    blur = n * limits(dt).eps
    name = call.func_name.removeprefix("linalg_")
    if name in ("eigh", "eigvalsh", "svd", "svdvals"):
        if name.startswith("eig") and not square:
            return None
        values = (
            torch.linalg.eigvalsh(0.5 * (a + a.mT))
            if name.startswith("eig")
            else torch.linalg.svdvals(a)
        )
        scale = values.abs().amax(-1, keepdim=True)
        if n < 2:
            return (scale - blur * scale + 1.0).amin()  # one value: no gap to close
        ordered = values.sort(-1).values
        gaps = ordered[..., 1:] - ordered[..., :-1]
        return (gaps - blur * scale).amin()
    if name == "cholesky":
        if not square:
            return None
        values = torch.linalg.eigvalsh(0.5 * (a + a.mT))
        scale = values.abs().amax(-1, keepdim=True)
        return (values[..., :1] - blur * scale).amin()
    if not square:
        return None
    values = torch.linalg.svdvals(a)
    return (values[..., -1:] - blur * values[..., :1]).amin()


CALL_LOSSES: dict[str, Callable[[torch.Tensor, OpSpec, str, CallSite], torch.Tensor | None]] = {
    "abs(x) + abs(y)": _atan2,
    "min distance": _cdist,
    "x - (p - 1) / 2": _mvlgamma,
    "number of non-ignored targets": _non_ignored,
    "smallest gap between eigenvalues (or the smallest eigenvalue)": _linalg,
}


def suspect_loss(
    op: str, operand: torch.Tensor, dtype: str = "float32", call: CallSite | None = None
) -> torch.Tensor | None:
    """A scalar; the op is at or past its invalid boundary when it is <= 0. None where the
    op has no objective for this call (e.g. cross_entropy with reduction='sum'): the search
    then relies on its gradient-free stages."""
    spec = CATALOGUE.by_op[op]
    x = operand.to(torch.float64) if operand.is_floating_point() else operand
    fn = LOSSES.get(spec.suspect_loss)
    if fn is not None:
        return fn(x.to(torch.float64), spec, dtype)
    with_call = CALL_LOSSES.get(spec.suspect_loss)
    if with_call is None:
        return None
    return with_call(x, spec, dtype, call or CallSite())


def has_loss(op: str) -> bool:
    name = CATALOGUE.by_op[op].suspect_loss
    return name in LOSSES or name in CALL_LOSSES


def op_names(op: str) -> frozenset[str]:
    """The `__name__`s under which the op reaches `__torch_function__`."""
    spec = CATALOGUE.by_op[op]
    names = {q.rsplit(".", 1)[-1] for f, q in spec.qualnames() if f == "torch"}
    # torch.linalg.eigh and torch.special.gammaln arrive as `linalg_eigh`, `special_gammaln`
    names.update(
        q.split(".", 1)[1].replace(".", "_")
        for f, q in spec.qualnames()
        if f == "torch" and q.startswith(("torch.linalg.", "torch.special."))
    )
    names.update(spec.methods)
    names.update(DUNDERS.get(op, ()))
    return frozenset(names)


DUNDERS = {
    "div": (
        "__rdiv__",
        "__rtruediv__",
        "__truediv__",
        "__floordiv__",
        "__rfloordiv__",
        "__itruediv__",
        "__idiv__",
        "div_",
        "floor_divide_",
    ),
    "pow": ("__pow__", "__ipow__", "__rpow__"),
    "fmod": ("__mod__", "__rmod__"),
}
# For these the operand is the receiver, not the second argument.
RECEIVER_IS_OPERAND = frozenset({"__rdiv__", "__rtruediv__", "__rfloordiv__", "__rmod__"})


def operand_of(
    op: str, func_name: str, args: tuple[object, ...], kwargs: dict[str, object]
) -> object | None:
    """The risky argument of one intercepted call."""
    spec = CATALOGUE.by_op[op]
    if func_name in RECEIVER_IS_OPERAND:
        return args[0] if args else None
    for key in spec.operand_keywords:
        if key in kwargs:
            return kwargs[key]
    index = spec.operand
    return args[index] if index < len(args) else None
