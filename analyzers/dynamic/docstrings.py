"""What a function's docstring says its parameters are: which ones are integers.

Code without annotations often types its parameters in prose. TensorFlow Probability's
`_sample_multinomial_as_iterated_binomial(num_samples, num_classes, probs, ...)` documents
`num_samples: Singleton integer Tensor: number of multinomial samples to draw.`; synthesised as
a float tensor, that count broke `tf.stack` long before the division the PR added. So the
`Args:` section (Google style, as TensorFlow, JAX and Keras write it) and the `Parameters`
section (NumPy style) are read, and a parameter whose type or first sentence says `int` or
`integer`, and never `float` nor many values (`int32 Tensor of shape [batch]`, `labels`), is
a count: it gets a small positive Python int, not a searched tensor
(signatures.signature_inputs).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

_GOOGLE_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_GOOGLE_ITEM = re.compile(r"^\s*(?P<name>\*{0,2}\w+)\s*(\((?P<type>[^)]*)\))?\s*:(?P<text>.*)$")
_NUMPY_ITEM = re.compile(r"^(?P<indent>\s*)(?P<name>\w+)\s*:\s*(?P<type>.+)$")
_INTEGER = re.compile(r"\b(int|integer|ints|integers|int32|int64)\b", re.IGNORECASE)
_FLOAT = re.compile(r"\b(float|floating|real|float32|float64|double)\b", re.IGNORECASE)
# an integer *tensor* of many values (labels, ids, a shape-[batch] count) is data, not a count
_MANY = re.compile(
    r"\b(shape|shaped|vector|matrix|list|array|sequence|tuple|batch|ids|indices|labels)\b"
    r"|\[",
    re.IGNORECASE,
)


def documented_integers(fn: Any) -> frozenset[str]:
    """The parameters `fn`'s docstring types as integers; empty without a docstring."""
    doc = inspect.getdoc(fn)
    if not doc:
        return frozenset()
    described = {**_numpy_style(doc), **_google_style(doc)}
    return frozenset(
        name
        for name, text in described.items()
        if _INTEGER.search(text) and not _FLOAT.search(text) and not _MANY.search(text)
    )


def _google_style(doc: str) -> dict[str, str]:
    """`name (type): text` or `name: text` under `Args:`, up to the first sentence's end; an
    item's continuation lines are indented deeper than the item."""
    found: dict[str, str] = {}
    lines = doc.splitlines()
    inside = False
    section_indent = 0
    current: str | None = None
    item_indent = 0
    for line in lines:
        if _GOOGLE_SECTION.match(line):
            inside, current = True, None
            section_indent = len(line) - len(line.lstrip())
            continue
        if not inside:
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= section_indent:  # the next section
            inside, current = False, None
            continue
        item = _GOOGLE_ITEM.match(line)
        if item and (current is None or indent <= item_indent):
            current, item_indent = item["name"].lstrip("*"), indent
            found[current] = f"{item['type'] or ''} {item['text']}"
        elif current is not None:
            found[current] += " " + line.strip()
    return {name: _first_sentence(text) for name, text in found.items()}


def _numpy_style(doc: str) -> dict[str, str]:
    """`name : type` lines under a `Parameters` heading underlined with dashes."""
    found: dict[str, str] = {}
    lines = doc.splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.strip() != "Parameters" or not set(lines[index + 1].strip()) <= {"-"}:
            continue
        for entry in lines[index + 2 :]:
            if entry.strip() and set(entry.strip()) <= {"-"}:
                break  # the next heading's underline: its title was read as an item
            item = _NUMPY_ITEM.match(entry)
            if item and not item["indent"]:
                found[item["name"]] = item["type"]
    return found


def _first_sentence(text: str) -> str:
    """What a parameter is, not what it is used with: `num_trials: Tensor of trials ...
    num_trials[..., tf.newaxis] must broadcast with logits.` stops at the first period
    followed by a space."""
    return re.split(r"(?<=[.;])\s", text.strip(), maxsplit=1)[0]
