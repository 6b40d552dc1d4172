"""Repairing a synthesised call that fails on its shapes, one input at a time.

A synthesised call gives every tensor parameter one shape, batch x features (entries.py), and
when that fails the harness tries other shapes for all of them at once. Real code mixes ranks
in one call: TFP's multinomial sampler takes `num_trials` shaped as the batch of `probs`
without its last dimension, and jax-md's ReaxFF terms take per-atom arrays of (4,) beside
per-pair arrays of (4, 8). No shape given to all inputs at once fits such a function.

The framework's error names the shapes that do not fit (`Incompatible shapes: [4,8] vs. [4]`,
`incompatible shapes for broadcasting: (4, 8), (4, 4)`, `operands could not be broadcast
together with shapes (4,8) (4,)`, `The size of tensor a (8) must match the size of tensor b
(4) at non-singleton dimension 1`). So an input whose shape is one of those named is given
another of them, one input at a time. An index past an array's rank (`Too many indices:
array is 0-dimensional, but 1 were indexed`: ReaxFF's per-atom-type constant read whole on
one line, `where(amas < 21.0, valf, vval3)`, and indexed by atom type on the next) names ranks,
not shapes: an input of the array's rank is given a shape of the rank the index needs that
another input of the call already has, or DEFAULT_BATCH in the new dimensions. A change is
kept only when the call then gets further through the finding's file: it runs, or it fails at
a later line (the lines its traceback passes through in that file, compared outermost first,
so a helper defined above its caller still counts as later). At most MAX_CHANGES changes are
kept, so the call stays close to the plain one; every shape it ends with was named by an error
of the code's own, is another input's or is DEFAULT_BATCH in a new dimension, and the review
states each input's shape in its box.

A call that gets further and then fails on something other than its shapes is handed to the
search as it is: a value check may pass at other values.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from collections.abc import Callable

import torch

from analyzers.dynamic.entry import Entry
from analyzers.dynamic.evaluation import Evaluation
from analyzers.dynamic.search import Searcher
from analyzers.dynamic.signatures import DEFAULT_BATCH
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.tensors import sample

MAX_CHANGES = 4  # inputs whose shape may change, in one call
MAX_TRIALS = 24  # calls tried in all
REPAIR_SECONDS = 8.0

# a shape in an error: (4, 8), (4,), [4,8], [4], and () or [] for a scalar, but not the
# parentheses of a call (`forward()`)
_SHAPE = re.compile(r"(?<![\w)\]])[(\[]((?:\s*\d+\s*,)*\s*\d*\s*)[)\]]")
# torch's elementwise mismatch names sizes, not shapes
_SIZES = re.compile(
    r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
    r" at non-singleton dimension (\d+)"
)
# an index past an array's rank: NumPy and JAX name both ranks; torch and TensorFlow name the
# array's (a 0-d one as such), and one index more is the least the code needs
_INDEXED = re.compile(r"(\d+)-dimensional, but (\d+) were indexed")
_RANK_ONLY = re.compile(
    r"too many indices for tensor of dimension (\d+)|input has only (\d+) dims"
    r"|invalid index of a (0)-dim tensor|slice (scalar) input|index to (scalar) variable",
    re.IGNORECASE,
)
_SHAPE_ERROR = re.compile(r"shape|broadcast|size of tensor|too many indices", re.IGNORECASE)

# one call of an entry: the evaluation of a draw from its box
Probe = Callable[[Entry], Evaluation]


def is_shape_error(error: str | None) -> bool:
    """A shape mismatch, or an index past an array's rank (`ranks_indexed`)."""
    if not error:
        return False
    return _SHAPE_ERROR.search(error) is not None or ranks_indexed(error) is not None


def shapes_named(error: str) -> list[tuple[int, ...]]:
    """The shapes a shape error names, in order, each once."""
    found = []
    for match in _SHAPE.finditer(error):
        dims = tuple(int(d) for d in match[1].split(",") if d.strip())
        if dims not in found:
            found.append(dims)
    return found


def ranks_indexed(error: str) -> tuple[int, int] | None:
    """(the array's rank, the rank its index needs) from an index error; None for others."""
    both = _INDEXED.search(error)
    if both:
        return int(both[1]), int(both[2])
    only = _RANK_ONLY.search(error)
    if only is None:
        return None
    rank = next(g for g in only.groups() if g is not None)
    return (0, 1) if rank == "scalar" else (int(rank), int(rank) + 1)


def _with_rank(specs: list[InputSpec], rank: int, wanted: int) -> list[tuple[int, tuple[int, ...]]]:
    """Each input of `rank` given each shape of rank `wanted` that another input has and that
    starts with its own (the most common first), then DEFAULT_BATCH in the new dimensions (a
    table by type and type, where the inputs are per atom and per pair)."""
    others = Counter(spec.shape for spec in specs if len(spec.shape) == wanted)
    tried: list[tuple[int, tuple[int, ...]]] = []
    for index, spec in enumerate(specs):
        if len(spec.shape) != rank:
            continue
        fitting = [shape for shape, _ in others.most_common() if shape[:rank] == spec.shape]
        batch = (*spec.shape, *(DEFAULT_BATCH,) * (wanted - rank))
        tried.extend((index, shape) for shape in dict.fromkeys([*fitting, batch]))
    return tried


def changes(specs: list[InputSpec], error: str) -> list[tuple[int, tuple[int, ...]]]:
    """(input, new shape) pairs to try for `error`, in input order: an input of a named shape
    takes each other named shape, then each input is tried one dimension short (the error
    may name only shapes the code made from its inputs: `shape '[4, 1]' is invalid for input
    of size 32`); under torch's sizes message, an input whose dimension at
    that index has one of the sizes loses that dimension (a per-atom array beside a per-pair
    one), or takes the other size; under an index error, an input of the indexed rank gains
    the dimensions the index needs (`_with_rank`)."""
    ranks = ranks_indexed(error)
    if ranks is not None and ranks[1] > ranks[0]:
        return _with_rank(specs, *ranks)
    tried: list[tuple[int, tuple[int, ...]]] = []
    sizes = _SIZES.search(error)
    if sizes:
        a, b, dim = (int(g) for g in sizes.groups())
        for index, spec in enumerate(specs):
            if len(spec.shape) > dim and spec.shape[dim] in (a, b):
                other = b if spec.shape[dim] == a else a
                before, after = spec.shape[:dim], spec.shape[dim + 1 :]
                tried.extend([(index, (*before, *after)), (index, (*before, other, *after))])
        return tried
    named = shapes_named(error)
    for index, spec in enumerate(specs):
        if spec.shape in named:
            tried.extend((index, shape) for shape in named if shape != spec.shape)
    # then the shapes the code made from its inputs: each input one dimension short
    tried.extend((index, spec.shape[:-1]) for index, spec in enumerate(specs) if spec.shape)
    return list(dict.fromkeys(tried))


def with_shape(entry: Entry, index: int, shape: tuple[int, ...]) -> Entry:
    """`entry` with input `index` drawn in `shape`; a known start no longer fits it."""
    specs = list(entry.specs)
    specs[index] = dataclasses.replace(specs[index], shape=shape)
    return dataclasses.replace(entry, specs=specs, start=None)


def repaired(entry: Entry, failure: Evaluation, probe: Probe) -> Entry | None:
    """`entry` with the shapes of some inputs changed until a call runs or fails on other
    than its shapes; None when no change gets the call further (see the module's
    docstring). `failure` is how the call failed as it is."""
    current, error, lines = entry, failure.error or "", failure.error_lines
    kept = tried = 0
    deadline = time.monotonic() + REPAIR_SECONDS
    while kept < MAX_CHANGES:
        for index, shape in changes(current.specs, error):
            if tried >= MAX_TRIALS or time.monotonic() > deadline:
                return None
            tried += 1
            trial = with_shape(current, index, shape)
            result = probe(trial)
            if result.error is None:
                return trial
            if result.error_lines > lines:
                current, error, lines = trial, result.error, result.error_lines
                kept += 1
                if not is_shape_error(error):
                    return current
                break
        else:
            return None
    return None


def one_call(path: str, lines: frozenset[int], op: str, seed: int) -> Probe:
    """A probe calling an entry once at a draw from its box, under the finding's op probe."""

    def call(entry: Entry) -> Evaluation:
        searcher = Searcher(entry, path, lines, op, dtype=entry.dtype, seed=seed)
        generator = torch.Generator().manual_seed(seed)
        return searcher.evaluate([sample(spec, generator) for spec in entry.specs])

    return call
