"""Arguments that are lists of tensors: gpytorch's `interpolate(x_grid: List[Tensor],
x_target)`, a feature pyramid's `features: Sequence[Tensor]`, `Tuple[Tensor, ...]`.

A list is no tensor: searched as one (`List[Tensor]` matches the tensor annotation), the code
indexed it as a grid (`x_grid[i][0]`) of the wrong rank, or `torch.is_tensor` sent it down a
legacy branch. So each element is its own searched input, and the call gathers the next
`length` inputs into one list where the argument goes (`SearchedList`). The search sees a
flat list of tensors, as for any entry; the reproducer spells the list (`[x_grid_0,
x_grid_1]`). Imports nothing of the PR's code, nor torch: the writer reads these too.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

LIST_LENGTH = 2  # elements of a list whose annotation gives no length: short, and plural

_ELEMENT = r"(?:[\w.]+\.)?(?:Tensor|ndarray|Array)"
_SEQUENCE = r"(?:[\w.]+\.)?(?:List|list|Sequence|MutableSequence|Iterable|Tuple|tuple)"
# `List[Tensor]`, `list[torch.Tensor]`, `collections.abc.Sequence[Tensor]`, `Tuple[Tensor, ...]`
_OPEN = re.compile(rf"^({_SEQUENCE})\[\s*{_ELEMENT}\s*(?:,\s*\.\.\.\s*)?\]$")
# `Tuple[Tensor, Tensor]`: as many as it lists
_FIXED = re.compile(rf"^((?:[\w.]+\.)?(?:Tuple|tuple))\[\s*{_ELEMENT}(?:\s*,\s*{_ELEMENT})+\s*\]$")


@dataclass(frozen=True)
class SearchedList:
    """Where a call's argument is a list (or a tuple) of the next `length` searched inputs;
    with `fields`, a namespace of them instead, one attribute each (namespaces.py: jax-md's
    `force_field.vval2`), as `types.SimpleNamespace(vval2=..., ...)`."""

    length: int
    is_tuple: bool = False
    fields: tuple[str, ...] = ()

    def take(self, inputs: Iterator[Any]) -> Any:
        items = [next(inputs) for _ in range(self.length)]
        if self.fields:
            return types.SimpleNamespace(**dict(zip(self.fields, items, strict=True)))
        return tuple(items) if self.is_tuple else items


def searched_namespace(fields: Sequence[str]) -> SearchedList:
    return SearchedList(len(fields), fields=tuple(fields))


def tensor_list(annotation: str) -> SearchedList | None:
    """The list an annotation asks for, or None when it is not a sequence of tensors."""
    text = annotation.strip()
    fixed = _FIXED.match(text)
    if fixed is not None:
        return SearchedList(text.count(",") + 1, is_tuple=True)
    open_ended = _OPEN.match(text)
    if open_ended is None:
        return None
    return SearchedList(
        LIST_LENGTH, is_tuple=open_ended[1].rsplit(".", 1)[-1] in ("Tuple", "tuple")
    )


def filled(
    template: Sequence[Any],
    inputs: Sequence[Any],
    replayed: Callable[[Any], Any] = lambda value: value,
) -> list[Any]:
    """A call's arguments from its template: the next input for each None, a list of the
    next ones for a `SearchedList`, and any other slot as `replayed` makes it (a recorded
    value)."""
    it = iter(inputs)
    return [
        next(it)
        if slot is None
        else slot.take(it)
        if isinstance(slot, SearchedList)
        else replayed(slot)
        for slot in template
    ]


def element_names(name: str, slot: SearchedList | None) -> list[str]:
    """The reproducer's names for one argument's inputs: `x_grid_0, x_grid_1` for a list,
    `force_field_vval2` for a namespace's attribute."""
    if slot is None:
        return [name]
    if slot.fields:
        return [f"{name}_{attribute}" for attribute in slot.fields]
    return [f"{name}_{index}" for index in range(slot.length)]
