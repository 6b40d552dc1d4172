"""Where a script's external values come from: the call sites both script modes share.

`CallSites` knows which repository line asked for a value, labels it, tells whether a frame is
on the watched lines, and wraps numpy's draws and loaders; `script.ExternalValues` (PyTorch)
and `script_tf.TFExternalValues` (TensorFlow) build on it. It is plain Python: the
reproducer carries a copy of this source (`writer.runtime_lines`), so it substitutes exactly
as the search did, and neither framework's module needs the other's.

Runs only inside the sandboxed harness, and in reproducers: it executes the PR's code.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from analyzers.dynamic.probe import MAX_FRAMES as PROBE_FRAMES

NUMPY_LOADS = ("load", "loadtxt", "genfromtxt")  # numpy's readers of arrays from files
NUMPY_DRAWS = (  # numpy.random's module-level functions that return floats
    "rand",
    "randn",
    "random",
    "random_sample",
    "ranf",
    "sample",
    "uniform",
    "normal",
    "standard_normal",
    "exponential",
    "standard_exponential",
    "gamma",
    "standard_gamma",
    "beta",
    "laplace",
    "logistic",
    "lognormal",
    "chisquare",
    "standard_t",
    "standard_cauchy",
    "rayleigh",
    "weibull",
    "pareto",
    "power",
    "gumbel",
    "triangular",
    "vonmises",
    "wald",
)
DISPATCH_FILES = ("overrides.py", "_tensor.py", "_device.py")  # torch's plumbing, not a caller
MAX_FRAMES = 32  # how far up a value's call site may be: past wrappers such as tqdm, and
# Keras's multi-step train loop, which asks for its batches 21 frames below `model.fit`
WATCH_FRAMES = PROBE_FRAMES  # the op's line is found exactly as the search's probe finds it


class StopScript(BaseException):
    """The watched op has run: the rest of the script is not needed. A BaseException, so the
    script's own `except Exception` cannot swallow it."""


class CallSites:
    """What the PyTorch and TensorFlow interceptors share: which repository line asked for a
    value, the value's label, whether a frame is on the watched lines, and numpy's draws.
    Plain Python (no framework): the reproducers carry a copy of it.

    `on_value(label, natural)` returns the value the script gets: `natural` (what the code
    drew or loaded) or a substitute of the same shape.
    """

    active: list[Any] = []  # the modes in force, innermost last (numpy's draws look here)

    def __init__(self, root: str, watch_path: str, watch_lines: Any, on_value: Any) -> None:
        self.root = os.path.realpath(root) + os.sep
        self.watch_path = os.path.realpath(watch_path)
        self.watch_lines = frozenset(watch_lines)
        self.on_value = on_value
        self.ran = False  # the watched op has run
        self.hits: list[Any] = []  # one entry per call of the op, its output first
        # the output of the last framework call on the watched lines in their first run: the
        # line's value, what a fix that removes the op (a fused API) is compared on
        self.line_value: Any = None
        # ... and in their latest run: computed after the script's last optimiser step, so
        # its graph is whole (the first run's was consumed by the script's own `backward`)
        self.latest_line_value: Any = None
        self.line_closed = False  # the lines ran once and the code went on past them
        self.line_runs = 0  # how many times the code went on past the lines
        self._on = False  # the last framework call was on the lines
        self.stop_at_line = False  # end the run there, op or not (a patched copy's run)
        # end the run after this many executions of the op: 1, or the training steps a bug
        # needs to show (a loss that is finite at step 0 and not once the weights moved)
        self.stop_after = 1
        self.expired: Any = None  # the run's time is up: a callable that raises (`_expire`)
        self.counts: dict[str, int] = {}
        # what the run handed the script as external values: data built from one of them
        # (`torch.from_numpy(drawn)`) is that value again, not another
        self.handed: list[Any] = []
        self._real: dict[str, str] = {}
        self._restore: list[Any] = []

    def _realpath(self, filename: str) -> str:
        path = self._real.get(filename)
        if path is None:
            path = self._real[filename] = os.path.realpath(filename)
        return path

    def _repo_file(self, filename: str) -> str | None:
        path = self._realpath(filename)
        if not path.startswith(self.root) or "site-packages" in path:
            return None
        return path[len(self.root) :].replace(os.sep, "/")

    def _on_watched_line(self, frame: Any) -> bool:
        for _ in range(WATCH_FRAMES):
            if frame is None:
                return False
            if self._realpath(frame.f_code.co_filename) == self.watch_path:
                return frame.f_lineno in self.watch_lines
            frame = frame.f_back
        return False

    def _site(self, frame: Any, walk: bool) -> tuple[str, int] | None:
        """The repository line that asked for a value: the caller itself (past torch's
        dispatch plumbing) for a random draw, the nearest repository frame for a batch."""
        for _ in range(MAX_FRAMES):
            if frame is None:
                return None
            filename = frame.f_code.co_filename
            rel = self._repo_file(filename)
            if rel is not None:
                return rel, frame.f_lineno
            if not walk and not filename.endswith(DISPATCH_FILES):
                return None
            frame = frame.f_back
        return None

    def _label(self, kind: str, site: tuple[str, int]) -> str:
        key = f"{kind} {site[0]}:{site[1]}"
        count = self.counts.get(key, 0)
        self.counts[key] = count + 1
        return f"{key} #{count}"

    def _expire(self) -> None:
        """End a run whose time is up here, at the next framework call or value, where the
        framework's own state is whole (SIGALRM itself may land inside torch's bookkeeping of
        its mode stack, and leave it broken)."""
        if self.expired is not None:
            ending, self.expired = self.expired, None
            ending()

    def _done(self) -> bool:
        """Is the run over at the next framework call or value off the watched lines?"""
        return (self.ran and len(self.hits) >= self.stop_after) or (
            self.stop_at_line and self.line_runs >= self.stop_after
        )

    def _on_line(self, value: Any) -> None:
        """A framework call on the watched lines gave `value` (kept from their first run)."""
        self._on = True
        self.latest_line_value = value
        if not self.line_closed:
            self.line_value = value

    def _off_line(self) -> None:
        if self._on:
            self._on = False
            self.line_runs += 1
        if self.line_value is not None:
            self.line_closed = True

    def _batch(self, label: str, batch: Any, where: str = "") -> Any:
        """A batch with each of its tensors (`_leaf`) substituted, inside tuples, lists,
        namedtuples and dicts; labelled by its place: `#0[1]`, `#0['x']`."""
        leaf = self._leaf(label + where, batch)
        if leaf is not None:
            return leaf
        if isinstance(batch, dict):
            items = {k: self._batch(label, v, f"{where}[{k!r}]") for k, v in batch.items()}
            try:
                return type(batch)(items)
            except TypeError:
                return items
        if isinstance(batch, (list, tuple)):  # noqa: UP038 (the reproducer may run on 3.9)
            parts = [self._batch(label, v, f"{where}[{i}]") for i, v in enumerate(batch)]
            if hasattr(batch, "_fields"):  # a namedtuple
                return type(batch)(*parts)
            return type(batch)(parts)
        return batch

    def _leaf(self, label: str, value: Any) -> Any:
        raise NotImplementedError

    def _next(self, original: Any, within: Any = None) -> Any:
        """A batch iterator's `__next__` (DataLoader's, tf.data's) whose batches are external
        values, keyed at the nearest repository frame that asked for them. `within(result,
        put)` substitutes a batch the iterator hands over wrapped (tf.data's Optional)."""
        mode = self

        def __next__(iterator: Any) -> Any:
            mode._expire()
            site = mode._site(sys._getframe(1), walk=True)
            if site is not None and mode._done():
                raise StopScript()
            batch = original(iterator)
            if site is None:
                return batch

            def put(value: Any) -> Any:
                return mode._batch(mode._label("data", site), value)

            return put(batch) if within is None else within(batch, put)

        return __next__

    def _patch_numpy(self) -> None:
        """numpy.random's float draws (`random`) and the arrays numpy reads from files
        (`data`), recorded at their call sites (`_numpy_draw`)."""
        numpy: Any = None
        with contextlib.suppress(ImportError):
            import numpy
        for owner, names, kind in (
            (getattr(numpy, "random", None), NUMPY_DRAWS, "random"),
            (numpy, NUMPY_LOADS, "data"),
        ):
            for name in names if owner is not None else ():
                draw = getattr(owner, name, None)
                if callable(draw):
                    draw = getattr(draw, "_numcheck_original", draw)
                    self._restore.append((owner, name, draw))
                    setattr(owner, name, _numpy_draw(draw, kind))

    def _unpatch(self) -> None:
        for owner, name, original in reversed(self._restore):
            setattr(owner, name, original)
        self._restore = []


def _numpy_draw(draw: Any, kind: str = "random") -> Any:
    """numpy.random.<draw> (or numpy.load, `kind` "data"), recorded at its call site while a
    mode is in force (a module that imported the function during a run keeps this wrapper: it
    asks for the mode of the day)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        natural = draw(*args, **kwargs)
        mode = CallSites.active[-1] if CallSites.active else None
        if mode is None or mode.ran or (kind == "data" and not hasattr(natural, "dtype")):
            return natural  # np.load's NpzFile is a mapping of arrays, not one
        site = mode._site(sys._getframe(1), walk=False)
        if site is None:
            return natural
        return mode._array(mode._label(kind, site), natural)

    wrapper._numcheck_original = draw  # type: ignore[attr-defined]
    return wrapper
