"""Escaping for GitHub-flavoured markdown.

Calls, operands and messages come from the pull request, i.e. from whoever opened it: they must
not be able to break a table, open an HTML element, inject links or ping people in our review.
"""

from __future__ import annotations

import html
import re

_MD_PUNCT = re.compile(r"([\\`*_\[\]#~!])")
_MENTION = re.compile(r"@(?=\w)")
_CODE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_BACKTICK_RUN = re.compile(r"`+")


def one_line(text: str) -> str:
    """Collapse whitespace: table cells and headlines are single lines."""
    return " ".join(text.split())


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def escape_text(text: str) -> str:
    """Plain text as inert markdown: no HTML, no emphasis or links, no @-mentions.

    `|` is left alone here; `table_cell` escapes it, once, for both text and code spans.
    """
    escaped = html.escape(text, quote=False)
    escaped = _MD_PUNCT.sub(r"\\\1", escaped)
    return _MENTION.sub("@&#8203;", escaped)


def _longest_backtick_run(text: str) -> int:
    return max((len(m.group(0)) for m in _BACKTICK_RUN.finditer(text)), default=0)


def code_span(text: str) -> str:
    """Inline code that survives backticks in the code itself (CommonMark: longer fence)."""
    text = one_line(text)
    if not text:
        return ""
    fence = "`" * (_longest_backtick_run(text) + 1)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def fenced(text: str, info: str = "") -> str:
    """A fenced block whose fence cannot be closed early by backticks inside `text`."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def inline_markdown(text: str) -> str:
    """Text that may quote code in `backticks` (as the static pass writes `why`).

    Code spans are kept as code, everything else is escaped, so the intended formatting
    survives and nothing else from the repository becomes markup.
    """
    text = one_line(text)
    parts: list[str] = []
    pos = 0
    for match in _CODE.finditer(text):
        parts.append(escape_text(text[pos : match.start()]))
        parts.append(code_span(match.group(2)))
        pos = match.end()
    parts.append(escape_text(text[pos:]))
    return "".join(parts)


def table_cell(markdown: str) -> str:
    """Rendered markdown made safe inside a GFM table row.

    GFM splits cells before parsing inlines, so `\\|` is needed even inside code spans.
    """
    return one_line(markdown).replace("|", "\\|")


def comment_safe(text: str) -> str:
    """Text for inside an HTML comment: it must not be able to end the comment."""
    return re.sub(r"[^A-Za-z0-9_.:=/+-]", "", text).replace("--", "-")
