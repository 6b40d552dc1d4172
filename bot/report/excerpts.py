"""The lines around each finding, kept while the PR's checkout exists.

The worker's checkout is removed as soon as the analysis ends, and the page must not fetch
code from GitHub on every view (it would need the installation's token in the web process), so
the worker keeps a few lines around each finding with the analysis. Only files inside the
checkout are read, only a bounded number of lines, each cut to a bounded length.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from analyzers.model import Finding

CONTEXT = 4  # lines before and after the finding's (or its fix's) lines
MAX_LINES = 40
MAX_LINE_CHARS = 400
MAX_FILE_BYTES = 2_000_000


def collect(
    root: Path, findings: Iterable[Finding], context: int = CONTEXT
) -> dict[str, dict[str, Any]]:
    """fingerprint -> {"start": first line number, "lines": [text, ...]}."""
    base = root.resolve()
    files: dict[str, list[str] | None] = {}
    out: dict[str, dict[str, Any]] = {}
    for finding in findings:
        if finding.path not in files:
            files[finding.path] = _read(base, finding.path)
        lines = files[finding.path]
        if not lines:
            continue
        first, last = finding.line, max(finding.end_line, finding.line)
        fix = finding.fix or {}
        if isinstance(fix.get("start_line"), int) and isinstance(fix.get("end_line"), int):
            first, last = min(first, fix["start_line"]), max(last, fix["end_line"])
        start = max(1, first - context)
        end = min(len(lines), last + context, start + MAX_LINES - 1)
        if start > len(lines):
            continue
        out[finding.fingerprint] = {
            "start": start,
            "lines": [t[:MAX_LINE_CHARS] for t in lines[start - 1 : end]],
        }
    return out


def _read(base: Path, relative: str) -> list[str] | None:
    path = (base / relative).resolve()
    if not path.is_relative_to(base) or not path.is_file():
        return None
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def fallback(finding: Finding) -> dict[str, Any]:
    """Without kept lines (an analysis from before excerpts were kept): the fix's original
    lines when there is a fix, else the call's own text at its columns."""
    fix = finding.fix or {}
    original = fix.get("original")
    if isinstance(original, str) and isinstance(fix.get("start_line"), int) and original:
        return {
            "start": fix["start_line"],
            "lines": original.splitlines()[:MAX_LINES],
            "partial": True,
        }
    text = " " * max(finding.column, 0) + finding.call
    return {"start": finding.line, "lines": text.splitlines()[:MAX_LINES], "partial": True}
