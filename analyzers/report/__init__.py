"""Renderers for an AnalysisResult: one entry point for the CLI, the Action and the bot.

Every front end calls `render`, so `numcheck review --format markdown` shows exactly what the App
would post and `--format sarif` exactly what code scanning would receive.
"""

from __future__ import annotations

from analyzers.model import AnalysisResult
from analyzers.report.jsonout import load_result, result_from_json, to_json_text
from analyzers.report.markdown import inline_comment, render_markdown, review_body
from analyzers.report.sarif import to_sarif, to_sarif_text
from analyzers.report.summary import comment_range
from analyzers.report.text import render_text

FORMATS: tuple[str, ...] = ("text", "json", "sarif", "markdown")

__all__ = [
    "FORMATS",
    "comment_range",
    "inline_comment",
    "load_result",
    "render",
    "render_markdown",
    "render_text",
    "result_from_json",
    "review_body",
    "to_json_text",
    "to_sarif",
    "to_sarif_text",
]


def render(result: AnalysisResult, fmt: str, *, color: bool = False) -> str:
    """Render `result` as text, json, sarif or markdown; `color` applies to text only."""
    if fmt == "text":
        return render_text(result, color=color)
    if fmt == "json":
        return to_json_text(result)
    if fmt == "sarif":
        return to_sarif_text(result)
    if fmt == "markdown":
        return render_markdown(result)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
