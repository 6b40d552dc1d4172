"""Floating-point facts per dtype, and rounding into each dtype.

The static pass folds constants the way the hardware will (so `1 + 1e-10 == 1` in float32,
`1e-8 == 0` in float16); the numbers are in docs/numerics.md and are checked against
`torch.finfo` in the tests, and so is each framework's handling of subnormals.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np


@dataclass(frozen=True)
class DtypeLimits:
    name: str
    max: float  # largest finite value
    tiny: float  # smallest positive normal
    smallest_subnormal: float
    eps: float  # machine epsilon
    exp_max: float  # exp(x) overflows above this
    softmax_zero_gap: float  # softmax gives exactly 0 when logits differ by more than this


DTYPES: dict[str, DtypeLimits] = {
    "float16": DtypeLimits(
        "float16",
        65504.0,
        6.103515625e-05,
        5.960464477539063e-08,
        0.0009765625,
        11.089866488461016,
        18.0,
    ),
    "bfloat16": DtypeLimits(
        "bfloat16",
        3.3895313892515355e38,
        1.1754943508222875e-38,
        9.183549615799121e-41,
        0.0078125,
        88.71892521235186,
        93.0,
    ),
    "float32": DtypeLimits(
        "float32",
        3.4028234663852886e38,
        1.1754943508222875e-38,
        1.401298464324817e-45,
        1.1920928955078125e-07,
        88.72283905206835,
        104.0,
    ),
    "float64": DtypeLimits(
        "float64",
        1.7976931348623157e308,
        2.2250738585072014e-308,
        5e-324,
        2.220446049250313e-16,
        709.782712893384,
        746.0,
    ),
}

# The precisions models train in besides float32 (`.half()`, autocast, bf16 mixed precision):
# a trigger in one of them whose inputs are finite in float32 is a precision finding.
LOW_PRECISIONS: tuple[str, ...] = ("bfloat16", "float16")

# The words of a trigger's `precision` block (analyzers/dynamic/precision.py writes it; the
# result schema's trigger.precision): how the low precision was applied, and what float32
# made of the same inputs. Spelled here once: the host keeps a block only in these words.
PrecisionMode = Literal["autocast", "cast", "policy"]
Float32Verdict = Literal["finite", "fails", "unreached", "error"]
PRECISION_MODES: tuple[str, ...] = get_args(PrecisionMode)
FLOAT32_VERDICTS: tuple[str, ...] = get_args(Float32Verdict)


def precision_failure(trigger: Mapping[str, Any] | None) -> str | None:
    """The low precision a trigger fails in while the same inputs are finite in float32 (a
    precision finding: its fix and its reader are about that precision), else None."""
    block = (trigger or {}).get("precision")
    if (
        isinstance(block, Mapping)
        and block.get("float32") == "finite"
        and block.get("dtype") in LOW_PRECISIONS
    ):
        return str(block["dtype"])
    return None


DTYPE_ALIASES = {
    "half": "float16",
    "fp16": "float16",
    "f16": "float16",
    "bf16": "bfloat16",
    "float": "float32",
    "fp32": "float32",
    "f32": "float32",
    "single": "float32",
    "double": "float64",
    "fp64": "float64",
    "f64": "float64",
}


def limits(dtype: str) -> DtypeLimits:
    return DTYPES[DTYPE_ALIASES.get(dtype, dtype)]


# Whether a framework's CPU kernels flush subnormal results to zero (FTZ/DAZ). TensorFlow
# sets flush-to-zero in its CPU threads, in float32 and float64 alike: tf.exp(-100.0) is 0.0
# where torch.exp gives 3.8e-44. PyTorch does not unless the program calls
# torch.set_flush_denormal(True); numpy never does. Checked against the installed frameworks in
# tests/test_catalogue.py. (CUDA kernels compiled with fast-math flush too; where a GPU is lent
# the CUDA tests record what they do.)
FLUSHES_SUBNORMALS: dict[str, bool] = {
    "tensorflow": True,
    "keras": True,
    "torch": False,
    "numpy": False,
    "math": False,
}


def smallest_positive(dtype: str, framework: str) -> float:
    """The smallest positive value an op of `framework` can return in `dtype`: the smallest
    normal where the framework flushes subnormals, else the smallest subnormal. exp(x) below it
    is exactly 0, so sqrt(exp(x)) has an infinite gradient and log(exp(x)) is -inf there."""
    lim = limits(dtype)
    return lim.tiny if FLUSHES_SUBNORMALS.get(framework, False) else lim.smallest_subnormal


def _to_bfloat16(value: float) -> float:
    """Round-to-nearest-even from float32 bits, as torch does."""
    (bits,) = struct.unpack("<I", struct.pack("<f", np.float32(value)))
    if (bits & 0x7F800000) == 0x7F800000:  # inf or nan stay as they are
        return float(np.float32(value))
    rounding = 0x7FFF + ((bits >> 16) & 1)
    bits = ((bits + rounding) >> 16) << 16
    (out,) = struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))
    return float(out)


def round_to(value: float, dtype: str) -> float:
    """The value the dtype actually stores for a Python float."""
    name = DTYPE_ALIASES.get(dtype, dtype)
    if math.isnan(value) or math.isinf(value):
        return value
    with np.errstate(over="ignore", under="ignore"):
        if name == "float16":
            return float(np.float16(value))
        if name == "float32":
            return float(np.float32(value))
        if name == "bfloat16":
            return _to_bfloat16(value)
    return float(value)


def add_in(a: float, b: float, dtype: str) -> float:
    """a + b as computed in the dtype (both operands rounded first)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return round_to(round_to(a, dtype) + round_to(b, dtype), dtype)
