"""`# numcheck: ignore[op]` and `# numcheck: fixme[op]` comments.

Comments are found with `tokenize`, so a `#` inside a string never counts. A malformed
directive suppresses nothing and lands in `problems`: a typo such as `ignor[log]` must not
quietly leave a finding unsuppressed, nor must `ignore log` quietly suppress every op.

Forms (several may share one comment, e.g. after `# noqa`):
    # numcheck: ignore            every op on this line
    # numcheck: ignore[log, div]  only these ops
    # numcheck: fixme[log]        same effect, but reported as known debt
Text after `]` is free (a reason); after a bare directive it must start with a separator
such as `--`, `#`, `(` or `:`.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

__all__ = ["KINDS", "Kind", "Suppression", "SuppressionHit", "Suppressions"]

Kind = Literal["ignore", "fixme"]
KINDS: tuple[Kind, ...] = ("ignore", "fixme")

_DIRECTIVE_RE = re.compile(r"#\s*numcheck\b(?P<colon>\s*:)?", re.IGNORECASE)
_KIND_RE = re.compile(r"\s*(?P<kind>[A-Za-z_-]*)")
_OP_RE = re.compile(r"[A-Za-z_][\w.\-]*")
_REASON_STARTS = ("#", "-", "\u2013", "\u2014", "(", ":", ";")


@dataclass(frozen=True)
class Suppression:
    """One directive as written; empty `ops` means every op."""

    line: int
    column: int
    kind: Kind
    ops: tuple[str, ...] = ()

    def covers(self, op: str) -> bool:
        return not self.ops or op in self.ops


@dataclass(frozen=True)
class SuppressionHit:
    """The directive that silenced a finding; `kind` "fixme" marks known debt."""

    kind: Kind
    line: int
    ops: tuple[str, ...]


class _Malformed(Exception):
    """A directive that cannot be trusted; carries the problem text."""


def _as_kind(word: str) -> Kind | None:
    lowered = word.lower()
    for kind in KINDS:
        if lowered == kind:
            return kind
    return None


def _parse_ops(body: str) -> tuple[str, ...]:
    items = [item.strip() for item in body.split(",")]
    if not any(items):
        raise _Malformed("empty op list; write a bare 'ignore' to suppress every op")
    ops: list[str] = []
    for item in items:
        if not item:
            raise _Malformed(f"empty op name in [{body}]")
        if not _OP_RE.fullmatch(item):
            raise _Malformed(f"invalid op name {item!r}")
        if item not in ops:
            ops.append(item)
    return tuple(ops)


def _parse_directive(text: str) -> tuple[Kind, tuple[str, ...]]:
    """Parse what follows `numcheck:`; raises _Malformed with a message saying why."""
    match = _KIND_RE.match(text)
    word = match.group("kind") if match else ""
    if not word:
        raise _Malformed("expected 'ignore' or 'fixme' after 'numcheck:'")
    kind = _as_kind(word)
    if kind is None:
        close = difflib.get_close_matches(word.lower(), KINDS, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else " (expected 'ignore' or 'fixme')"
        raise _Malformed(f"unknown directive {word!r}{hint}")
    rest = text[match.end() :] if match else ""
    stripped = rest.lstrip()
    if stripped.startswith("["):
        end, comment_at = stripped.find("]"), stripped.find("#")
        if end < 0 or 0 <= comment_at < end:  # op names never hold "#"
            shown = stripped.split("#", 1)[0].rstrip()
            raise _Malformed(f"unclosed '[' in '{kind}{shown}'")
        return kind, _parse_ops(stripped[1:end])
    if stripped and not stripped.startswith(_REASON_STARTS):
        raise _Malformed(
            f"unexpected text {stripped.split()[0]!r} after bare '{kind}'; write "
            f"'{kind}[op]' to name ops, or start a reason with '--'"
        )
    return kind, ()


def _scan_comment(
    comment: str, line: int, column: int, entries: list[Suppression], problems: list[str]
) -> None:
    for found in _DIRECTIVE_RE.finditer(comment):
        col = column + found.start()
        after = comment[found.end() :]
        if found.group("colon") is None:
            word = after.split()[0].lower() if after.split() else ""
            word = word.split("[")[0]
            if difflib.get_close_matches(word, KINDS, n=1, cutoff=0.6):
                problems.append(
                    f"line {line}: missing ':' after 'numcheck' "
                    f"(write '# numcheck: {after.strip()}')"
                )
            continue
        try:
            kind, ops = _parse_directive(after)
        except _Malformed as exc:
            problems.append(f"line {line}: {exc}")
            continue
        entries.append(Suppression(line=line, column=col, kind=kind, ops=ops))


@dataclass
class Suppressions:
    """Every directive in one file; `match` records use so `unused` can report the rest."""

    entries: list[Suppression] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _by_line: dict[int, list[int]] = field(default_factory=dict, init=False, repr=False)
    _used: dict[int, set[str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for index, entry in enumerate(self.entries):
            self._by_line.setdefault(entry.line, []).append(index)

    @classmethod
    def from_source(cls, source: str) -> Suppressions:
        """Collect directives from comment tokens; untokenizable source gives none."""
        entries: list[Suppression] = []
        problems: list[str] = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(source).readline):
                if tok.type == tokenize.COMMENT:
                    _scan_comment(tok.string, tok.start[0], tok.start[1], entries, problems)
        except (tokenize.TokenError, SyntaxError) as exc:
            where = _error_line(exc)
            return cls(
                problems=[
                    f"line {where}: cannot tokenize source, so no suppression "
                    f"comments apply: {_error_text(exc)}"
                ]
            )
        return cls(entries=entries, problems=problems)

    def match(self, op: str, lines: Iterable[int]) -> SuppressionHit | None:
        """First directive covering `op` on any of `lines` (finding line, statement start)."""
        for line in dict.fromkeys(lines):
            for index in self._by_line.get(line, ()):
                entry = self.entries[index]
                if entry.covers(op):
                    self._used.setdefault(index, set()).add(op)
                    return SuppressionHit(kind=entry.kind, line=entry.line, ops=entry.ops)
        return None

    def unused(self) -> list[Suppression]:
        """Directives (or the listed ops of one) that silenced nothing so far."""
        left: list[Suppression] = []
        for index, entry in enumerate(self.entries):
            used = self._used.get(index, set())
            if not entry.ops:
                if not used:
                    left.append(entry)
                continue
            idle = tuple(op for op in entry.ops if op not in used)
            if idle:
                left.append(replace(entry, ops=idle))
        return left


def _error_line(exc: tokenize.TokenError | SyntaxError) -> int | str:
    if isinstance(exc, SyntaxError):
        return exc.lineno or "?"
    position = exc.args[1] if len(exc.args) > 1 else None
    if isinstance(position, tuple) and position:
        return int(position[0])
    return "?"


def _error_text(exc: tokenize.TokenError | SyntaxError) -> str:
    if isinstance(exc, SyntaxError):
        return exc.msg
    return str(exc.args[0]) if exc.args else "tokenize error"
