"""What the command line prints besides the report: colour decisions, safe one-line text,
and the hints that tell a user what to do next.

Colour only on a terminal: never in a pipe, a file or a CI log that is not a TTY, never
with `NO_COLOR` set to anything non-empty (https://no-color.org) or `TERM=dumb`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from typing import TextIO

RESET = "\033[0m"
BOLD = "\033[1m"
DIM = "\033[2m"
RED = "\033[1;31m"
YELLOW = "\033[33m"
GREEN = "\033[32m"
MAGENTA = "\033[35m"
CYAN = "\033[36m"
STATUS_COLORS = {
    "confirmed": RED,
    "potential": YELLOW,
    "not-triggered": GREEN,
    "error": MAGENTA,
    "validated": GREEN,
    "none-validated": YELLOW,
}

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def color_enabled(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", "") != "" or env.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def paint(code: str, text: str, enabled: bool) -> str:
    return f"{code}{text}{RESET}" if enabled and code else text


def one_line(text: str) -> str:
    """Repository text (paths, op names) on one line, with no control characters: it must
    not drive the terminal, and in a CI log a newline could start a workflow command."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", " ".join(str(text).split()))


# ---------------------------------------------------------------- the dynamic pass's needs

DYNAMIC_FRAMEWORKS = ("torch", "tensorflow")


def dynamic_frameworks() -> list[str]:
    """The frameworks the dynamic pass can run code with that this Python has (found
    without importing them)."""
    found: list[str] = []
    for name in DYNAMIC_FRAMEWORKS:
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except (ImportError, ValueError):
            continue
    return found


def missing_framework_hint(environ: Mapping[str, str] | None = None) -> str:
    """What to do when neither PyTorch nor TensorFlow is installed."""
    env = os.environ if environ is None else environ
    where = f"this Python ({sys.executable})"
    if env.get("PRE_COMMIT") == "1":
        return (
            f"the dynamic pass needs PyTorch (or TensorFlow), which {where} does not "
            "have: in .pre-commit-config.yaml give the hook "
            "`additional_dependencies: ['torch==2.13.0']`, or use the static `numcheck` "
            "hook instead"
        )
    return (
        f"the dynamic pass needs PyTorch (or TensorFlow), which {where} does not have: "
        "install it with `pip install 'numcheck[torch]'`, or pass --static-only to skip "
        "the dynamic pass"
    )
