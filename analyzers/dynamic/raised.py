"""The op failing on plain Python numbers: the exception it raises at its own line.

`translation_length / reference_length` of two ints, `math.log(p)` of a float, `1. / ratio`:
Python raises (ZeroDivisionError, math's domain and range errors) where a tensor would hold
inf or NaN, and the run stops there. These are the static pass's `unknown-operand`
candidates (static/zeros.py: a counter a loop that may not run leaves at 0), and no probe
sees them, since no framework function runs. So a run that raises the op's Python error
(catalogue.PYTHON_ERRORS) with its innermost frame on a flagged line of the finding's file
is the op failing: a forward trigger that shows as "exception", which the reproducer checks
the same way (writer.RAISED_HERE). The same exception raised anywhere else, a helper the
line calls included, is not the op's, and stays the run's error.
"""

from __future__ import annotations

import builtins
import traceback

from analyzers.catalogue import PYTHON_ERRORS, python_errors
from analyzers.dynamic.evaluation import Evaluation
from analyzers.dynamic.probe import LineWatch

SHOWS = "exception"  # Evaluation.visible of such a trigger, and the reproducer's check


def raised_by_op(exc: BaseException, watch: LineWatch, op: str) -> bool:
    """Is `exc` what `op` raises on Python numbers, raised by a watched line itself?"""
    return _raised_as(exc, watch, python_errors(op))


def raised_by_any_op(exc: BaseException, watch: LineWatch) -> bool:
    """Is `exc` what some op raises on Python numbers (any of `catalogue.PYTHON_ERRORS`, or
    math's domain error), raised by a watched line itself? For a call made before the op is
    known to the caller: building an entry (objects.py)."""
    every = {"ValueError", *(name for names in PYTHON_ERRORS.values() for name in names)}
    return _raised_as(exc, watch, tuple(sorted(every)))


def _raised_as(exc: BaseException, watch: LineWatch, names: tuple[str, ...]) -> bool:
    """Is `exc` one of the builtin exceptions `names` (a ValueError only as math's domain
    error), with its innermost frame on a watched line?"""
    kinds = tuple(getattr(builtins, name) for name in names)
    if not isinstance(exc, kinds):
        return False
    if type(exc) is ValueError and "math domain error" not in str(exc):
        return False  # a ValueError of the code's own (`raise ValueError("bad p")`)
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    return watch.same_file(last.filename) and last.lineno in watch.lines


def op_raised(exc: BaseException, watch: LineWatch, op: str) -> Evaluation | None:
    """The evaluation of a run that raised `exc`: a trigger when the op raised it at its
    line, else None (the caller records the run's error)."""
    if not raised_by_op(exc, watch, op):
        return None
    return Evaluation(reached=True, loss=0.0, forward=True, visible=SHOWS, reaches_output=True)


def failed(exc: BaseException, watch: LineWatch, op: str) -> Evaluation:
    """The evaluation of a run that raised `exc`: the op's trigger (`op_raised`), else the
    run's error with the innermost line of the watched file it passed through."""
    raised = op_raised(exc, watch, op)
    if raised is not None:
        return raised
    return Evaluation(error=f"{type(exc).__name__}: {exc}", error_lines=lines_passed(exc, watch))


def lines_passed(exc: BaseException, watch: LineWatch) -> tuple[int, ...]:
    """The lines of the watched file that `exc`'s traceback passed through, outermost first."""
    frames = traceback.extract_tb(exc.__traceback__)
    return tuple(f.lineno or 0 for f in frames if watch.same_file(f.filename))
