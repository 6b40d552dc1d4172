"""Small tensor utilities the entry, the search, harvest and the harness share: the dtype
table, a draw from a box, copies for code that writes into its inputs, the way back from a
recorded torch tensor to TensorFlow, and whether two calls answered alike.

Its own module so that none of those modules needs another for them (they used to import
each other's private helpers, in a cycle). Runs inside the sandboxed harness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from analyzers.dynamic.specs import InputSpec

TORCH_DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}


def sample(spec: InputSpec, generator: torch.Generator) -> torch.Tensor:
    """A uniform draw from the box; integers inclusive of both ends."""
    dtype = TORCH_DTYPES[spec.dtype]
    if spec.dtype == "bool":
        return torch.randint(0, 2, spec.shape, generator=generator).to(torch.bool)
    if not spec.is_float:
        return torch.randint(
            int(spec.lo), int(spec.hi) + 1, spec.shape, generator=generator, dtype=dtype
        )
    values = torch.rand(spec.shape, generator=generator, dtype=torch.float64)
    return (spec.lo + (spec.hi - spec.lo) * values).to(dtype)


def writes_into_leaf(exc: BaseException) -> bool:
    """autograd's refusal of an in-place write into an input that requires grad."""
    return "leaf Variable that requires grad is being used in an in-place" in str(exc)


def copied(x: torch.Tensor) -> torch.Tensor:
    return x.clone() if x.requires_grad else x


def to_tf(value: Any) -> Any:
    """The way back: torch tensors become tf constants of the same dtype (a recorded
    integer mask, say); anything else is passed as recorded."""
    if not isinstance(value, torch.Tensor):
        return value
    import tensorflow as tf

    if value.dtype == torch.bfloat16:
        return tf.cast(tf.constant(value.float().numpy()), tf.bfloat16)
    return tf.constant(value.detach().cpu().numpy())


def same_answers(
    answer: Callable[[Any], list[Any]],
    recorded: Any,
    rebuilt: Any,
    same: Callable[[Any, Any], bool],
) -> bool:
    """`answer(recorded)` and `answer(rebuilt)` give the same outputs, by `same`. A recorded
    call that raises here has nothing to compare (yes); a rebuild that raises does (no)."""
    try:
        expected = answer(recorded)
    except Exception:  # the PR's code may raise in any way
        return True
    try:
        got = answer(rebuilt)
    except Exception:
        return False
    return len(got) == len(expected) and all(same(a, b) for a, b in zip(expected, got, strict=True))
