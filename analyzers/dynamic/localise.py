"""Where NaN/Inf first appears when the trigger runs: the op, and the user's line calling it.

The flagged op is where the search aimed, but the first non-finite value may come from a
library function called on that line (F.normalize, a loss) or from another op on the way;
the comment should name the first one. PyTorch only: every op passes `__torch_function__`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from analyzers.dynamic.entries import Entry
from analyzers.dynamic.probe import tensors_in

MAX_FRAMES = 40


def _finite(values: list[torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in values
               if t.is_floating_point() or t.is_complex())


def _any_nan(values: list[torch.Tensor]) -> bool:
    return any(bool(torch.isnan(t).any()) for t in values
               if t.is_floating_point() or t.is_complex())


def _writes_infinity(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """`masked_fill(mask, float("-inf"))` puts the infinity there on purpose."""
    scalars = [a for a in (*args, *kwargs.values()) if isinstance(a, float)]
    return any(a in (float("inf"), float("-inf")) for a in scalars)


class FirstNonFinite(TorchFunctionMode):
    """Remembers the first call that makes a NaN from NaN-free inputs, or an infinity from
    finite ones (an -inf mask going into softmax is not yet a failure; the NaN out of it is)."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = os.path.realpath(root)
        self.found: dict[str, Any] | None = None

    def _user_frame(self) -> tuple[str, int] | None:
        frame: FrameType | None = sys._getframe(2)
        for _ in range(MAX_FRAMES):
            if frame is None:
                return None
            path = os.path.realpath(frame.f_code.co_filename)
            if path.startswith(self.root + os.sep):
                return os.path.relpath(path, self.root), frame.f_lineno
            frame = frame.f_back
        return None

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.found is None and not _writes_infinity(args, kwargs):
            inputs = tensors_in(args) + tensors_in(kwargs)
            outputs = tensors_in(out)
            made_nan = not _any_nan(inputs) and _any_nan(outputs)
            if made_nan or (_finite(inputs) and not _finite(outputs)):
                where = self._user_frame()
                self.found = {"op": getattr(func, "__name__", str(func)),
                              "path": where[0] if where else None,
                              "line": where[1] if where else None}
        return out


def localise(entry: Entry, inputs: Sequence[torch.Tensor], repo: str) -> dict[str, Any] | None:
    """Run the trigger once more, watching every op; None when the forward stays finite
    (a gradient-only failure) or the entry is not PyTorch code."""
    if entry.framework != "torch":
        return None
    mode = FirstNonFinite(repo)
    leaves = [x.detach().clone() for x in inputs]
    try:
        with mode, torch.no_grad():
            entry.call(leaves)
    except Exception:  # the trigger may make the code raise: nothing more to say then
        return mode.found
    return mode.found
