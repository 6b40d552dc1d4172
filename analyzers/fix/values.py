"""Values that cross between the PR's code and the fix checks: framework outputs as float64
NumPy arrays, inputs copied per run (code may write into them), seeded draws, and figures
made JSON-safe (NaN and Inf as strings)."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np


def seed_all(seed: int) -> None:
    """Seed the random generators the code may draw from (only frameworks already loaded)."""
    np.random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
    if "tensorflow" in sys.modules:
        tf = sys.modules["tensorflow"]
        if hasattr(tf, "random"):
            tf.random.set_seed(seed)


def to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def copied(sample: Sequence[Any]) -> list[Any]:
    """The code under test may write into its inputs (masked_fill_): each run gets its own."""
    out = []
    for x in sample:
        out.append(x.detach().clone() if hasattr(x, "detach") else x)
    return out


def float_arrays(value: Any) -> list[np.ndarray]:
    """Every float array in an output: tensors (torch, TF), arrays, nested containers."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [a for v in value for a in float_arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in float_arrays(v)]
    if isinstance(value, float):
        return [np.asarray(value, dtype=np.float64)]
    try:
        array = to_numpy(value)
    except Exception:  # not array-like: nothing to compare
        return []
    if array.dtype.kind not in "fc":
        return []
    return [array.astype(np.float64)]


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, np.generic):
        return jsonable(value.item())
    return value
