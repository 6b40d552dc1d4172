"""Numbers a fix writes into the code, derived from the dtype (analyzers/dtypes.py).

An epsilon must be representable and normal in the dtype (1e-8 is 0.0 in float16), must not be
absorbed where it matters (next to the value that reaches 0 it never is: `x + eps` at `x = 0` is
`eps`), and should be small next to the operand's magnitude so that in-domain values barely
move. A clamp bound comes from the op's invalid domain: `tiny` keeps log/sqrt operands positive,
`1 - eps` keeps acos/asin/atanh strictly inside (-1, 1), `log(max)` keeps exp finite.
"""

from __future__ import annotations

import math

import numpy as np

from analyzers.dtypes import DTYPE_ALIASES, DTYPES, limits, round_to

DEFAULT_DTYPE = "float32"


def dtype_name(dtype: str | None) -> str:
    name = DTYPE_ALIASES.get(dtype or DEFAULT_DTYPE, dtype or DEFAULT_DTYPE)
    return name if name in DTYPES else DEFAULT_DTYPE


def epsilon(dtype: str | None, scale: float | None = None) -> float:
    """A power of ten at least the dtype's machine epsilon times the operand's scale (capped
    at 1), and normal in the dtype: float32 1e-06, float16 1e-03, bfloat16 1e-02,
    float64 1e-15 for operands of order 1 or unknown."""
    lim = limits(dtype_name(dtype))
    magnitude = 1.0 if scale is None or not math.isfinite(scale) or scale <= 0 else min(scale, 1.0)
    exponent = math.ceil(math.log10(lim.eps * magnitude) - 1e-9)
    exponent = max(exponent, math.ceil(math.log10(lim.tiny) - 1e-9))
    value = float(f"1e{exponent}")
    while round_to(value, dtype_name(dtype)) < lim.tiny or round_to(value, dtype_name(dtype)) == 0:
        exponent += 1
        value = float(f"1e{exponent}")
    return value


def epsilon_under_root(dtype: str | None) -> float:
    """An epsilon added to a sum of squares before its square root: the square of
    `epsilon`, so the root moves by about `epsilon` at 0, raised to a power of ten that is
    normal in the dtype (float32 1e-12, float16 1e-04)."""
    name = dtype_name(dtype)
    exponent = round(2 * math.log10(epsilon(name)))
    while round_to(float(f"1e{exponent}"), name) < limits(name).tiny:
        exponent += 1
    return float(f"1e{exponent}")


def literal(value: float) -> str:
    """`1e-06` is written `1e-6`, as people write it."""
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        mantissa, _, exponent = f"{value:e}".partition("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    text = repr(float(value))
    return text


def tiny_literal(dtype: str | None) -> str:
    """The smallest positive normal of the dtype, written so it parses back to exactly it."""
    name = dtype_name(dtype)
    tiny = limits(name).tiny
    for digits in range(4, 18):
        text = f"{tiny:.{digits}e}"
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
        if round_to(float(text), name) == tiny and float(text) >= tiny * (1 - 1e-12):
            return text
    return repr(tiny)


def exp_bound(dtype: str | None, threshold: float | None = None) -> str:
    """The largest two-decimal number whose exp is finite in the dtype (88.72 in float32)."""
    name = dtype_name(dtype)
    limit = threshold if threshold is not None else limits(name).exp_max
    value = math.floor(limit * 100) / 100
    while round_to(value, name) > limit:
        value = round(value - 0.01, 2)
    return f"{value:.2f}"


def unit_margin(dtype: str | None) -> float:
    """eps such that `1 - eps` rounds strictly below 1 and `-1 + eps` strictly above -1."""
    name = dtype_name(dtype)
    eps = epsilon(name)
    assert round_to(1 - eps, name) < 1 and round_to(-1 + eps, name) > -1
    assert round_to(1 + eps, name) > 1
    return eps


def is_zero_in(value: float, dtype: str | None) -> bool:
    with np.errstate(under="ignore"):
        return round_to(value, dtype_name(dtype)) == 0.0
