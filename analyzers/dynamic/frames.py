"""Where a framework call came from in the repository's own code, and what to call an entry's
inputs: shared by the PyTorch and TensorFlow localisers (localise.py, localise_tf.py), which
both name the op's line and the inputs a non-finite value reaches."""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzers.dynamic.entry import Entry

MAX_FRAMES = 40
MAX_NAMED = 20  # at most this many input / parameter names in a result


class UserFrames:
    """The innermost frame of the repository's own code above a framework call, at most
    `limit` frames up; a frame of the file `stop` (the replay's own module) ends the walk."""

    def __init__(self, root: str, limit: int = MAX_FRAMES, stop: str | None = None) -> None:
        self.root = os.path.realpath(root)
        self.limit = limit
        self.stop = stop
        self._inside: dict[str, str | None] = {}

    def _relative(self, filename: str) -> str | None:
        if filename not in self._inside:
            path = os.path.realpath(filename)
            self._inside[filename] = (
                os.path.relpath(path, self.root) if path.startswith(self.root + os.sep) else None
            )
        return self._inside[filename]

    def find(self, depth: int) -> tuple[str, int] | None:
        return self.find_from(sys._getframe(depth + 1))

    def find_from(self, frame: FrameType | None) -> tuple[str, int] | None:
        for _ in range(self.limit):
            if frame is None or (
                self.stop is not None and os.path.realpath(frame.f_code.co_filename) == self.stop
            ):
                return None
            relative = self._relative(frame.f_code.co_filename)
            if relative is not None:
                return relative, frame.f_lineno
            frame = frame.f_back
        return None


def input_names(entry: Entry, count: int) -> list[str]:
    """The call's inputs by parameter name (else x0, x1, ...), then configured weights by
    their parameter name (weights.py)."""
    weights = list(entry.weights)
    count -= len(weights)
    names = list(entry.param_names)
    if len(names) >= count and len(set(names[:count])) == count:
        return names[:count] + weights
    return [f"x{i}" for i in range(count)] + weights
