"""A candidate as a patch: a unified diff for `--diff`/`--fix`, and the lines of a GitHub
suggestion block.

A suggestion block replaces exactly the lines a review comment covers, so the patch states its
range (`start_line`..`end_line` of the original, 1-based, inclusive: the finding's lines, widened
to the lines the rewrite touched) and the new text for exactly those lines. An import the fix
needs lies outside that range; such a patch says `suggestion_complete: false` and the diff is
what carries the import.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Patch:
    kind: str
    name: str
    description: str
    path: str
    diff: str
    start_line: int
    end_line: int
    replacement: str  # the new text of lines start_line..end_line (newline-terminated)
    original: str  # the old text of those lines
    suggestion_complete: bool  # False: the diff also adds an import outside the range
    imports: tuple[str, ...] = ()

    def suggestion(self) -> str:
        """The body of a review comment's suggestion block (GitHub: ```suggestion)."""
        fence = "````" if "```" in self.replacement else "```"
        return f"{fence}suggestion\n{self.replacement}{fence}\n"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["imports"] = list(self.imports)
        data["suggestion"] = self.suggestion()
        return data


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


def changed_range(before: str, after: str) -> tuple[int, int] | None:
    """The 1-based inclusive range of original lines that differ (None: no change). A pure
    insertion is attributed to the line before it."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    first: int | None = None
    last: int | None = None
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        lo, hi = (i1 + 1, i2) if i2 > i1 else (max(i1, 1), max(i1, 1))
        first = lo if first is None else min(first, lo)
        last = hi if last is None else max(last, hi)
    if first is None or last is None:
        return None
    return first, last


def make_patch(
    path: str,
    original: str,
    rewritten: str,
    with_imports: str,
    *,
    line: int,
    end_line: int,
    kind: str,
    name: str,
    description: str,
    imports: tuple[str, ...] = (),
) -> Patch:
    """`rewritten` is the source with the expression rewrite only; `with_imports` adds what
    the rewrite needs imported (the same text when nothing is)."""
    changed = changed_range(original, rewritten)
    start, end = line, end_line
    if changed is not None:
        start, end = min(start, changed[0]), max(end, changed[1])
    old_lines = original.splitlines(keepends=True)
    new_lines = rewritten.splitlines(keepends=True)
    tail = len(old_lines) - end  # lines after the range: identical in both
    replacement_lines = new_lines[start - 1 : len(new_lines) - tail]
    replacement = "".join(replacement_lines)
    if replacement and not replacement.endswith("\n"):
        replacement += "\n"
    old_text = "".join(old_lines[start - 1 : end])
    return Patch(
        kind=kind,
        name=name,
        description=description,
        path=path,
        diff=unified_diff(path, original, with_imports),
        start_line=start,
        end_line=end,
        replacement=replacement,
        original=old_text,
        suggestion_complete=with_imports == rewritten,
        imports=imports,
    )


def apply_suggestion(original: str, patch: Patch) -> str:
    """What GitHub does when a suggestion is committed: the range's lines replaced."""
    lines = original.splitlines(keepends=True)
    return (
        "".join(lines[: patch.start_line - 1])
        + patch.replacement
        + "".join(lines[patch.end_line :])
    )
