"""Python source excerpts as HTML: tokens coloured, the flagged lines and call marked.

The page is rendered on the server and must read without JavaScript, so highlighting is done
here with the standard library's tokenizer. Excerpts start and end anywhere (inside a call, a
string or an indented block), so each line is tokenized on its own and whatever does not
tokenize stays plain text: colour helps, it never hides a character.
"""

from __future__ import annotations

import io
import keyword
import tokenize
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

BUILTINS = frozenset(
    {
        "print",
        "len",
        "range",
        "min",
        "max",
        "abs",
        "sum",
        "float",
        "int",
        "list",
        "dict",
        "tuple",
        "isinstance",
        "super",
        "self",
    }
)


@dataclass(frozen=True)
class Line:
    number: int
    html: Markup
    flagged: bool


def _classes(text: str) -> list[str]:
    """A CSS class per character of one line ("" for plain)."""
    classes = [""] * len(text)
    previous: tokenize.TokenInfo | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            (row, start), (end_row, end) = token.start, token.end
            if row != 1:
                break
            css = ""
            if token.type == tokenize.NAME:
                if keyword.iskeyword(token.string) or keyword.issoftkeyword(token.string):
                    css = "tok-kw"
                elif token.string in BUILTINS:
                    css = "tok-bi"
                elif previous is not None and previous.string == "def":
                    css = "tok-fn"
            elif token.type == tokenize.NUMBER:
                css = "tok-num"
            elif token.type == tokenize.STRING:
                css = "tok-str"
            elif token.type == tokenize.COMMENT:
                css = "tok-com"
            stop = end if end_row == 1 else len(text)
            for i in range(start, min(stop, len(text))):
                classes[i] = css
            previous = token
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the rest of the line stays plain
    return classes


def highlight(text: str, mark: tuple[int, int] | None = None) -> Markup:
    """One line as HTML spans; `mark` (start, end columns) is wrapped in <mark>."""
    classes = _classes(text)
    marked = [mark is not None and mark[0] <= i < mark[1] for i in range(len(text))]
    return Markup(
        "".join(
            f"<mark>{''.join(pieces)}</mark>" if is_marked else "".join(pieces)
            for is_marked, pieces in _runs(text, classes, marked)
        )
    )


def _runs(text: str, classes: list[str], marked: list[bool]) -> list[tuple[bool, list[str]]]:
    """Escaped spans of equal class, grouped into marked and unmarked runs."""
    runs: list[tuple[bool, list[str]]] = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and classes[j] == classes[i] and marked[j] == marked[i]:
            j += 1
        chunk = escape(text[i:j], quote=False)
        if classes[i]:
            chunk = f'<span class="{classes[i]}">{chunk}</span>'
        if runs and runs[-1][0] == marked[i]:
            runs[-1][1].append(chunk)
        else:
            runs.append((marked[i], [chunk]))
        i = j
    return runs


def excerpt_lines(
    lines: list[str],
    first: int,
    flagged: tuple[int, int],
    call: tuple[int, int, int, int] | None = None,
) -> list[Line]:
    """Numbered, highlighted lines from line `first`; lines in `flagged` (first, last) are
    marked, and the call's span (line, column, end_line, end_column; 0-based columns) too."""
    out: list[Line] = []
    for offset, text in enumerate(lines):
        number = first + offset
        mark: tuple[int, int] | None = None
        if call is not None and call[0] <= number <= call[2]:
            start = call[1] if number == call[0] else len(text) - len(text.lstrip())
            end = call[3] if number == call[2] else len(text)
            mark = (start, max(start, end))
        out.append(Line(number, highlight(text, mark), flagged[0] <= number <= flagged[1]))
    return out
