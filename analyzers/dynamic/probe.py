"""Watch one op at one source location through PyTorch's own dispatch.

A `TorchFunctionMode` sees every torch function, Tensor method and operator; the probe keeps
the calls whose name is the finding's op and whose nearest frame in the finding's file is on
the finding's lines, and records the operand and the output of each, with the rest of the call
its objective reads (`CallSite`: atan2's second argument, cdist's second point set, the targets of
a cross-entropy, the function's name).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from analyzers.dynamic.suspect import CallSite, call_site, op_names, operand_of

MAX_FRAMES = 12  # how far up from __torch_function__ the user's line may be


@dataclass
class Hit:
    """One call of the watched op: what went in, what came out."""

    func_name: str
    operand: torch.Tensor
    output: Any  # a tensor, or a tuple of them (eigh, svd, slogdet)
    call: CallSite = field(default_factory=CallSite)

    @property
    def float_operands(self) -> list[torch.Tensor]:
        """The operand and the other float tensors the op reads (atan2's x): the op's local
        derivative is checked with respect to each."""
        others = [
            t for t in self.call.others if isinstance(t, torch.Tensor) and t.is_floating_point()
        ]
        return [self.operand] + [t for t in others if t is not self.operand]


def tensors_in(value: Any) -> list[torch.Tensor]:
    """Every tensor in a value as code returns it: a tensor, or nested tuples, lists, dicts."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    return []


class LineWatch:
    """Is the code that called into the framework on one of the watched lines of one file?

    Shared by the PyTorch and TensorFlow probes; `realpath` is cached per code file because
    this runs on every framework call of every evaluation.
    """

    def __init__(self, path: str, lines: frozenset[int]) -> None:
        self.path = os.path.realpath(path)
        self.lines = lines
        self._same_file: dict[str, bool] = {}

    def caller_on_line(self) -> bool:
        """Called from the hook (`__torch_function__`, a TF wrapper): its caller's frames."""
        frame: FrameType | None = sys._getframe(2)
        for _ in range(MAX_FRAMES):
            if frame is None:
                return False
            if self.same_file(frame.f_code.co_filename):
                return frame.f_lineno in self.lines
            frame = frame.f_back
        return False

    def same_file(self, filename: str) -> bool:
        """Is `filename` (a code object's, relative where numcheck compiled a module from
        its relative path) the watched file?"""
        same = self._same_file.get(filename)
        if same is None:
            same = os.path.realpath(filename) == self.path
            self._same_file[filename] = same
        return same


class OpProbe(TorchFunctionMode):
    def __init__(self, path: str, lines: frozenset[int], op: str) -> None:
        super().__init__()
        self.op = op
        self.hits: list[Hit] = []
        self._names = op_names(op)
        self.watch = LineWatch(path, lines)

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in self._names and self.watch.caller_on_line():
            operand = operand_of(self.op, name, args, kwargs)
            if isinstance(operand, torch.Tensor) and (
                isinstance(out, torch.Tensor) or (isinstance(out, tuple) and tensors_in(out))
            ):
                # tuples: eigh, svd and slogdet return several tensors
                call = call_site(self.op, name, args, kwargs, operand)
                self.hits.append(Hit(name, operand, out, call))
        return out

    def reset(self) -> None:
        self.hits.clear()
