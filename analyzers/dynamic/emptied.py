"""The tests' own call with one of its sequences emptied: an empty corpus, empty sentences.

A metric over token lists (`compute_bleu(reference_corpus, translation_corpus)`) counts
lengths in a loop and divides by them; the static pass flags the division as a counter a loop
may leave at 0 (static/zeros.py ACCUMULATOR). Its tests call it with lists of tokens, which
hold no float tensor to search, so the search never runs on them. Emptying one argument at a
time keeps everything else the tests chose: the whole list (`[]`: the loop over it does not
run), or each of its elements (`[[], []]`: every translation empty while the references are
not, which is what makes BLEU's brevity ratio 0). Each variant is one fixed call, run once
under the probe (runners/harness._emptied_calls), and the finding's box names what was
emptied.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from analyzers.dynamic.entry import Entry
from analyzers.dynamic.harvest import REPLAYABLE, Recorded

MAX_ITEMS = 20_000  # scalars in a recorded argument a script may spell out
# how an argument was emptied, as the box says it (report/summary._emptied renders only these)
WHOLE, ELEMENTS = "whole", "elements"


@dataclass
class EmptiedEntry(Entry):
    """A recorded call with one positional argument emptied: no searched input."""

    emptied: str = ""  # the parameter's name
    how: str = WHOLE  # WHOLE: `[]`; ELEMENTS: each element empty


def plain_data(value: Any, budget: list[int] | None = None) -> bool:
    """Lists and tuples of numbers, strings, booleans and None, nested, at most MAX_ITEMS
    scalars in all: what a reproducer can spell (encoding.encode_value)."""
    budget = [MAX_ITEMS] if budget is None else budget
    if isinstance(value, REPLAYABLE):
        budget[0] -= 1
        return budget[0] >= 0
    if type(value) in (list, tuple):
        return all(plain_data(v, budget) for v in value)
    return False


def _variants(value: Any) -> Iterator[tuple[str, Any]]:
    if type(value) not in (list, tuple) or not value:
        return
    yield WHOLE, type(value)()
    if all(type(v) in (list, tuple) and v for v in value):
        yield ELEMENTS, type(value)(type(v)() for v in value)


def emptied_entries(
    key: str, call: Recorded, fn: Callable[..., Any], framework: str = "torch"
) -> list[EmptiedEntry]:
    """The recorded call of a plain function (no owner) whose arguments are all plain data,
    once per way to empty one of its sequence arguments; run (and its reproducer written)
    as code of `framework`, the finding's, though no tensor goes in."""
    if call.owner is not None:
        return []
    if not all(plain_data(v) for v in (*call.args, *call.kwargs.values())):
        return []
    names = _parameter_names(fn, len(call.args))
    out = []
    for i, value in enumerate(call.args):
        for how, empty in _variants(value):
            template = [*call.args[:i], empty, *call.args[i + 1 :]]
            out.append(
                EmptiedEntry(
                    key,
                    [],
                    fn,
                    "harvested",
                    template=template,
                    template_kwargs=dict(call.kwargs),
                    framework=framework,
                    emptied=names[i],
                    how=how,
                )
            )
    return out


def _parameter_names(fn: Callable[..., Any], count: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]
