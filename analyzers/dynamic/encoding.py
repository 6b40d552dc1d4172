"""Values as a reproducer's plan holds them: constructor and keyword arguments as plain data
(`writer.spell_value` writes them back as source), tensors in full or as a base value plus
the points that differ (`writer.tensor_code`). No entry, no PR code: harvest, weights and
the reproducer all write values this way.
"""

from __future__ import annotations

import base64
from typing import Any

import torch

from analyzers.dynamic.minimise import base_value
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.writer import spell_value, unravel

INLINE_LIMIT = 12  # tensors with at most this many elements are written out in full

MAX_POINTS = 24  # beyond this many non-base values the tensor is written out in full


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
        return {"dict": [[encode_value(k), encode_value(v)] for k, v in value.items()]}  # type: ignore[attr-defined]
    raise ValueError(
        f"a {kind.__module__}.{kind.__qualname__}"
        if kind.__module__ != "builtins"
        else f"a {kind.__qualname__}"
    )


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
    values = (
        values
        if spec.dtype == "bool"
        else values.to(torch.float64 if spec.is_float else torch.int64)
    )
    base = base_value(spec)
    flat = values.reshape(-1)
    indices = [int(i) for i in torch.nonzero(flat != base).reshape(-1)]
    out: dict[str, Any] = {
        "dtype": spec.dtype,
        "shape": list(x.shape),
        "float": spec.is_float,
        "base": base,
        "inline": x.numel() <= INLINE_LIMIT or len(indices) > MAX_POINTS,
    }
    if out["inline"]:
        out["values"] = values.tolist()
    else:
        out["points"] = [[unravel(i, tuple(x.shape)), flat[i].item()] for i in indices]
    return out


def tensor_data(value: torch.Tensor) -> dict[str, Any]:
    """A whole tensor as plan data: its dtype and every value (a small recorded state)."""
    return {"dtype": str(value.dtype).replace("torch.", ""), "values": value.tolist()}
