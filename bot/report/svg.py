"""Plots for the report pages, drawn on the server as SVG text (no plotting library, no script).

A reader should see at a glance how the search closed in on the op: the objective it minimised
against evaluations, the invalid boundary as a dashed line, where restarts began, and the
trigger. The objective spans decades (0.9 down to 1e-7 is common), so an axis that does switches
to a symmetric log scale, which keeps 0 (the boundary) and negative values (past it) in view.
Every figure is `role="img"` with a <title> and a <desc> saying in words what it shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from itertools import count
from typing import Any

WIDTH, HEIGHT = 680, 320
LEFT, RIGHT, TOP, BOTTOM = 78, 24, 58, 58
INK = "#1a1a1a"  # text and axes: 17:1 on white
GRID = "#d9d9d9"
VALUE = "#1f4e9c"  # evaluations (blue)
BEST = "#0b2e6b"
RESTART = "#a64b00"  # restarts (orange-brown, 5.9:1 on white)
BOUNDARY = "#b00020"  # the invalid boundary (red, 6.6:1 on white)
INVALID_FILL = "#fdecee"
SECOND = "#5b2c83"  # a second series (purple)
STATUS_COLOURS = {
    "confirmed": "#b00020",
    "potential": "#a64b00",
    "not-triggered": "#1f4e9c",
    "error": "#4d4d4d",
}

_ids = count(1)


def fmt(value: float) -> str:
    """Short tick and tooltip numbers: 0, 0.25, 1e-06, 3.2e+04."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if float(value).is_integer() and magnitude < 1e6:
        return str(int(value))
    if magnitude >= 1e4 or magnitude < 1e-3:
        mantissa, exponent = f"{value:.1e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent):+03d}"
    return f"{value:.3g}"


@dataclass(frozen=True)
class Scale:
    """Data to pixels along one axis; symmetric-log when `linthresh` is set."""

    lo: float
    hi: float
    start: float  # pixel of lo
    end: float  # pixel of hi
    linthresh: float | None = None

    def _t(self, v: float) -> float:
        if self.linthresh is None:
            return v
        return math.copysign(math.log10(1 + abs(v) / self.linthresh), v)

    def __call__(self, v: float) -> float:
        a, b = self._t(self.lo), self._t(self.hi)
        if b == a:
            return (self.start + self.end) / 2
        return self.start + (self._t(v) - a) / (b - a) * (self.end - self.start)

    def ticks(self, most: int = 7) -> list[float]:
        if self.linthresh is None:
            return nice_ticks(self.lo, self.hi, most)
        return _log_ticks(self.lo, self.hi, self.linthresh, most)


def nice_ticks(lo: float, hi: float, most: int = 7) -> list[float]:
    """Round ticks (1, 2, 5 times a power of ten) covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(0.0 if abs(value) < step * 1e-9 else round(value, 12))
        value += step
    return ticks


def covering_ticks(lo: float, hi: float, most: int = 7) -> list[float]:
    """`nice_ticks`, plus one more step where the last falls short of `hi`."""
    ticks = nice_ticks(lo, hi, most)
    if len(ticks) > 1 and ticks[-1] < hi:
        ticks.append(round(ticks[-1] + (ticks[1] - ticks[0]), 12))
    return ticks


def _log_ticks(lo: float, hi: float, linthresh: float, most: int) -> list[float]:
    """0 and the powers of ten inside [lo, hi] from `linthresh` up, every k-th decade so
    that at most `most` remain."""
    top = max(abs(lo), abs(hi), linthresh)
    exponents = range(math.floor(math.log10(linthresh)), math.floor(math.log10(top)) + 1)
    positive = [10.0**e for e in exponents if 10.0**e <= hi]
    negative = [-(10.0**e) for e in exponents if -(10.0**e) >= lo]
    step = 1
    while len(positive[::step]) + len(negative[::step]) + 1 > most:
        step += 1
    ticks = sorted(negative[::-1][::step][::-1]) if negative else []
    if lo <= 0 <= hi:
        ticks.append(0.0)
    return ticks + positive[::-step][::-1]


def value_scale(
    values: Sequence[float], start: float, end: float, always: Sequence[float] = ()
) -> Scale:
    """A y scale for `values` (plus `always`, e.g. the boundary), symmetric-log when the
    non-zero magnitudes span more than two decades."""
    every = [v for v in [*values, *always] if math.isfinite(v)] or [0.0]
    lo, hi = min(every), max(every)
    magnitudes = [abs(v) for v in every if v != 0]
    if magnitudes and max(magnitudes) / min(magnitudes) > 100:
        linthresh = 10.0 ** math.floor(math.log10(min(magnitudes)))
        return Scale(min(lo, 0.0), max(hi, 0.0) * 1.15 or linthresh, start, end, linthresh)
    pad = (hi - lo) * 0.08 or (abs(hi) * 0.5 or 1.0)
    ticks = nice_ticks(lo - pad, hi + pad)
    return Scale(min(ticks[0], lo), max(ticks[-1], hi), start, end)


class Figure:
    """One SVG: plot area, axes and legend; callers add marks in data coordinates."""

    def __init__(self, title: str, desc: str, x: Scale, y: Scale, *, kind: str) -> None:
        self.id = f"plot{next(_ids)}"
        self.title, self.desc, self.x, self.y, self.kind = title, desc, x, y, kind
        self.back: list[str] = []
        self.marks: list[str] = []
        self.legend: list[tuple[str, str]] = []
        self._label_ends = [-math.inf, -math.inf]  # right end of the last label, per row

    def axes(self, x_label: str, y_label: str, x_ticks: Sequence[float] | None = None) -> None:
        left, right = LEFT, WIDTH - RIGHT
        top, bottom = TOP, HEIGHT - BOTTOM
        out = [f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>']
        for tick in self.y.ticks():
            py = self.y(tick)
            out.append(
                f'<line x1="{left}" x2="{right}" y1="{py:.1f}" y2="{py:.1f}" '
                f'stroke="{GRID}" stroke-width="1"/>'
            )
            out.append(
                f'<text x="{left - 8}" y="{py + 4:.1f}" text-anchor="end" '
                f'class="tick">{escape(fmt(tick))}</text>'
            )
        for tick in x_ticks if x_ticks is not None else self.x.ticks():
            px = self.x(tick)
            out.append(
                f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{bottom}" y2="{bottom + 5}" '
                f'stroke="{INK}"/>'
            )
            out.append(
                f'<text x="{px:.1f}" y="{bottom + 19}" text-anchor="middle" '
                f'class="tick">{escape(fmt(tick))}</text>'
            )
        out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{bottom}" stroke="{INK}"/>')
        out.append(f'<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="{INK}"/>')
        out.append(
            f'<text x="{(left + right) / 2:.1f}" y="{HEIGHT - 14}" text-anchor="middle" '
            f'class="axis-label">{escape(x_label)}</text>'
        )
        out.append(
            f'<text x="16" y="{(top + bottom) / 2:.1f}" text-anchor="middle" '
            f'class="axis-label" transform="rotate(-90 16 {(top + bottom) / 2:.1f})">'
            f"{escape(y_label)}</text>"
        )
        self.back = out + self.back

    def hline(self, value: float, label: str, *, css: str, colour: str) -> None:
        py = self.y(value)
        self.marks.append(
            f'<line class="{css}" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
            f'y1="{py:.1f}" y2="{py:.1f}" stroke="{colour}" stroke-width="2" '
            f'stroke-dasharray="7 5" data-value="{value!r}"/>'
        )
        self.marks.append(
            f'<text class="{css}-label" x="{WIDTH - RIGHT - 4}" y="{py - 6:.1f}" '
            f'text-anchor="end" fill="{colour}">{escape(label)}</text>'
        )

    def shade_below(self, value: float, label: str) -> None:
        """The region past the invalid boundary."""
        top = max(TOP, min(self.y(value), HEIGHT - BOTTOM))
        height = HEIGHT - BOTTOM - top
        if height > 0:
            self.back.append(
                f'<rect class="invalid-region" x="{LEFT}" y="{top:.1f}" '
                f'width="{WIDTH - RIGHT - LEFT}" height="{height:.1f}" '
                f'fill="{INVALID_FILL}"><title>{escape(label)}</title></rect>'
            )

    def vline(self, at: float, label: str) -> None:
        """A dotted line where a stage begins, labelled in the first of two rows above the
        plot with room for it (a stage too close to the last two goes unlabelled; its line
        still says its name on hover)."""
        px = self.x(at)
        self.back.append(
            f'<line class="stage-change" x1="{px:.1f}" x2="{px:.1f}" y1="{TOP}" '
            f'y2="{HEIGHT - BOTTOM}" stroke="#8c8c8c" stroke-dasharray="2 3">'
            f"<title>stage {escape(label)} from evaluation {fmt(at)}</title>"
            "</line>"
        )
        width = 7.0 * len(label) + 6
        for row, end in enumerate(self._label_ends):
            if px + 3 >= end and px + 3 + width <= WIDTH:
                self._label_ends[row] = px + 3 + width
                self.back.append(
                    f'<text class="stage-label" x="{px + 3:.1f}" '
                    f'y="{TOP - 18 + 13 * row}" fill="{INK}">{escape(label)}</text>'
                )
                return

    def polyline(
        self, points: Sequence[tuple[float, float]], *, css: str, colour: str, step: bool = False
    ) -> None:
        coords: list[str] = []
        previous: tuple[float, float] | None = None
        for x, y in points:
            px, py = self.x(x), self.y(y)
            if step and previous is not None:
                coords.append(f"{px:.1f},{previous[1]:.1f}")
            coords.append(f"{px:.1f},{py:.1f}")
            previous = (px, py)
        if coords:
            self.marks.append(
                f'<polyline class="{css}" points="{" ".join(coords)}" '
                f'fill="none" stroke="{colour}" stroke-width="1.6"/>'
            )

    def marker(self, x: float, y: float, shape: str, colour: str, tip: str, css: str) -> None:
        px, py = self.x(x), self.y(y)
        tip_xml = f"<title>{escape(tip)}</title>"
        if shape == "circle":
            body = (
                f'<circle class="{css}" cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}" '
                f'fill-opacity="0.75">{tip_xml}</circle>'
            )
        elif shape == "square":
            body = (
                f'<rect class="{css}" x="{px - 3:.1f}" y="{py - 3:.1f}" width="6" height="6" '
                f'fill="none" stroke="{colour}" stroke-width="1.5">{tip_xml}</rect>'
            )
        elif shape == "diamond":
            body = (
                f'<path class="{css}" d="M{px:.1f},{py - 5:.1f} L{px + 5:.1f},{py:.1f} '
                f'L{px:.1f},{py + 5:.1f} L{px - 5:.1f},{py:.1f} Z" fill="none" '
                f'stroke="{colour}" stroke-width="1.6">{tip_xml}</path>'
            )
        else:  # a cross: the trigger
            body = (
                f'<path class="{css}" d="M{px - 6:.1f},{py - 6:.1f} L{px + 6:.1f},'
                f'{py + 6:.1f} M{px - 6:.1f},{py + 6:.1f} L{px + 6:.1f},{py - 6:.1f}" '
                f'stroke="{colour}" stroke-width="2.5">{tip_xml}</path>'
            )
        self.marks.append(body)

    def add_legend(self, label: str, swatch: str) -> None:
        self.legend.append((label, swatch))

    def render(self) -> str:
        legend: list[str] = []
        x = LEFT
        for label, swatch in self.legend:
            legend.append(
                f'<g transform="translate({x},{12})">{swatch}'
                f'<text x="14" y="4" class="legend">{escape(label)}</text></g>'
            )
            x += 22 + int(len(label) * 6.6)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot plot-{self.kind}" '
            f'id="{self.id}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
            f'height="{HEIGHT}" role="img" aria-labelledby="{self.id}-title '
            f'{self.id}-desc" aria-label="{escape(self.title)}" '
            f'font-family="system-ui, sans-serif" font-size="12" fill="{INK}">'
            f'<title id="{self.id}-title">{escape(self.title)}</title>'
            f'<desc id="{self.id}-desc">{escape(self.desc)}</desc>'
            + "".join(self.back)
            + "".join(self.marks)
            + "".join(legend)
            + "</svg>"
        )


def _swatch(shape: str, colour: str) -> str:
    if shape == "line":
        return f'<line x1="0" x2="10" y1="0" y2="0" stroke="{colour}" stroke-width="2"/>'
    if shape == "dashed":
        return (
            f'<line x1="0" x2="10" y1="0" y2="0" stroke="{colour}" stroke-width="2" '
            f'stroke-dasharray="4 2"/>'
        )
    if shape == "diamond":
        return f'<path d="M5,-5 L10,0 L5,5 L0,0 Z" fill="none" stroke="{colour}"/>'
    if shape == "cross":
        return f'<path d="M0,-5 L10,5 M0,5 L10,-5" stroke="{colour}" stroke-width="2"/>'
    if shape == "square":
        return f'<rect x="1" y="-4" width="8" height="8" fill="none" stroke="{colour}"/>'
    if shape == "bar":
        return f'<rect x="0" y="-5" width="10" height="10" fill="{colour}"/>'
    return f'<circle cx="5" cy="0" r="3.5" fill="{colour}"/>'


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def search_plot(trace: dict[str, Any], *, op: str, where: str) -> str | None:
    """The search at one op: its objective per evaluation, best so far, restarts, the
    boundary and (when it triggered) the trigger. None when the trace has no usable point."""
    points = [
        p
        for p in trace.get("points") or []
        if isinstance(p, dict) and _number(p.get("evaluation")) is not None
    ]
    valued = [p for p in points if _number(p.get("value")) is not None]
    if not valued:
        return None
    boundary = _number(trace.get("boundary")) or 0.0
    objective = str(trace.get("objective") or "objective")
    triggered = bool(trace.get("triggered"))
    xs = [float(p["evaluation"]) for p in points]
    x_hi = max(max(xs), 1.0)
    # restarts come first and fast, the long stages after: past a few hundred evaluations a
    # logarithmic axis keeps both readable
    x = Scale(0.0, x_hi, LEFT, WIDTH - RIGHT, 1.0 if x_hi > 300 else None)
    values = [float(p["value"]) for p in valued]
    y = value_scale(values, HEIGHT - BOTTOM, TOP, always=(boundary,))
    last = valued[-1]
    seconds = _number(last.get("seconds")) or 0.0
    triggered = triggered and points[-1] is last  # the trigger is the last point judged
    said = (
        f"{len(valued)} of {trace.get('evaluations_seen', len(valued))} evaluations shown; "
        f"the objective went from {fmt(values[0])} to {fmt(min(values))}"
    )
    said += (
        f" and crossed the boundary at {fmt(boundary)} after evaluation "
        f"{int(last['evaluation'])} ({seconds:.3g} s)"
        if triggered
        else f" without reaching the boundary at {fmt(boundary)}"
    )
    restarts = sum(bool(p.get("restart")) for p in points)
    figure = Figure(
        f"Search for a NaN/Inf at {op} ({where}): objective {objective} per evaluation",
        f"{said}; {restarts} restart(s) marked. The op fails where the objective "
        f"is at or below {fmt(boundary)}"
        + ("; the y axis is symmetric-logarithmic." if y.linthresh else "."),
        x,
        y,
        kind="search",
    )
    figure.axes(
        "evaluations (each a run of the code under the probe"
        + (", log scale)" if x.linthresh else ")"),
        f"objective: {objective}",
    )
    figure.shade_below(boundary, "inputs here make the op produce NaN/Inf")
    stage = None
    for p in points:
        if p.get("stage") != stage:
            stage = p.get("stage")
            figure.vline(float(p["evaluation"]), str(stage))
    best = [
        (float(p["evaluation"]), float(p["best"]))
        for p in valued
        if _number(p.get("best")) is not None
    ]
    figure.polyline(best, css="best", colour=BEST, step=True)
    figure.hline(
        boundary,
        f"invalid boundary: {objective} = {fmt(boundary)}",
        css="boundary",
        colour=BOUNDARY,
    )
    for p in valued:
        tip = (
            f"evaluation {int(p['evaluation'])}, {_number(p.get('seconds')) or 0:.4g} s, "
            f"stage {p.get('stage')}: {objective} = {fmt(float(p['value']))}"
        )
        if p.get("restart"):
            figure.marker(
                float(p["evaluation"]),
                float(p["value"]),
                "diamond",
                RESTART,
                tip + " (restart)",
                "restart",
            )
        else:
            figure.marker(
                float(p["evaluation"]), float(p["value"]), "circle", VALUE, tip, "evaluation"
            )
    if triggered:
        figure.marker(
            float(last["evaluation"]),
            float(last["value"]),
            "cross",
            INK,
            f"trigger: evaluation {int(last['evaluation'])}, {seconds:.4g} s",
            "trigger",
        )
    figure.add_legend("evaluation", _swatch("circle", VALUE))
    figure.add_legend("restart", _swatch("diamond", RESTART))
    figure.add_legend("best so far", _swatch("line", BEST))
    figure.add_legend("boundary", _swatch("dashed", BOUNDARY))
    if triggered:
        figure.add_legend("trigger", _swatch("cross", INK))
    return figure.render()


def deviation_plot(figures: dict[str, Any]) -> str | None:
    """The fixed code against the original on normal inputs: max absolute and relative
    deviation per input, with the absolute tolerance dashed."""
    series = [
        s
        for s in figures.get("per_input") or []
        if isinstance(s, dict)
        and _number(s.get("input")) is not None
        and _number(s.get("max_abs")) is not None
    ]
    if not series:
        return None
    atol = _number(figures.get("atol"))
    xs = [float(s["input"]) for s in series]
    x = Scale(min(xs) - 0.5, max(xs) + 0.5, LEFT, WIDTH - RIGHT)
    absolute = [float(s["max_abs"]) for s in series]
    relative = [_number(s.get("max_rel")) or 0.0 for s in series]
    y = value_scale(absolute + relative, HEIGHT - BOTTOM, TOP, always=(atol * 1.5,) if atol else ())
    worst = max(absolute)
    desc = (
        f"{len(series)} normal inputs; largest absolute deviation {fmt(worst)}, largest "
        f"relative {fmt(max(relative))}"
        + (f"; tolerance {fmt(atol)} absolute" if atol else "")
        + (". The fixed code gives identical values on every input." if worst == 0 else ".")
    )
    figure = Figure(
        "Deviation of the fixed code from the original on normal inputs",
        desc,
        x,
        y,
        kind="deviation",
    )
    ticks = nice_ticks(min(xs), max(xs), 9) if len(xs) > 9 else xs
    figure.axes(
        "normal input", "deviation (max over outputs)", [t for t in ticks if float(t).is_integer()]
    )
    if atol:
        figure.hline(atol, f"tolerance: {fmt(atol)} absolute", css="tolerance", colour=BOUNDARY)
    for s, a, r in zip(series, absolute, relative, strict=True):
        figure.marker(
            float(s["input"]),
            a,
            "circle",
            VALUE,
            f"input {int(s['input'])}: max abs deviation {fmt(a)}",
            "abs",
        )
        figure.marker(
            float(s["input"]),
            r,
            "square",
            SECOND,
            f"input {int(s['input'])}: max rel deviation {fmt(r)}",
            "rel",
        )
    figure.add_legend("max absolute", _swatch("circle", VALUE))
    figure.add_legend("max relative", _swatch("square", SECOND))
    if atol:
        figure.add_legend("tolerance", _swatch("dashed", BOUNDARY))
    return figure.render()


def history_chart(analyses: Sequence[tuple[str, dict[str, int]]]) -> str | None:
    """Findings per analysis over time, stacked by status (oldest left)."""
    if not analyses:
        return None
    totals = [sum(counts.values()) for _, counts in analyses]
    x = Scale(0.5, len(analyses) + 0.5, LEFT, WIDTH - RIGHT)  # analysis i at i + 1
    top = max(max(totals), 1)
    ticks = covering_ticks(0, top, 6)
    y = Scale(0.0, max(ticks[-1], top), HEIGHT - BOTTOM, TOP)
    statuses = [s for s in STATUS_COLOURS if any(c.get(s) for _, c in analyses)]
    desc = "; ".join(
        f"{label}: {total} finding(s)"
        for (label, _), total in list(zip(analyses, totals, strict=True))[-12:]
    )
    figure = Figure(f"Findings per analysis, {len(analyses)} analyses", desc, x, y, kind="history")
    every = max(1, math.ceil(len(analyses) / 10))
    figure.axes(
        "analysis (oldest first)",
        "findings",
        [float(i) for i in range(1, len(analyses) + 1, every)],
    )
    width = max(2.0, min(40.0, (WIDTH - LEFT - RIGHT) / len(analyses) * 0.7))
    for index, (label, counts) in enumerate(analyses, 1):
        base = 0
        for status in statuses:
            n = counts.get(status, 0)
            if not n:
                continue
            y0, y1 = y(base), y(base + n)
            figure.marks.append(
                f'<rect class="bar bar-{status}" x="{x(index) - width / 2:.1f}" '
                f'y="{y1:.1f}" width="{width:.1f}" height="{y0 - y1:.1f}" '
                f'fill="{STATUS_COLOURS[status]}"><title>{escape(label)}: {n} {status}'
                f"</title></rect>"
            )
            base += n
    for status in statuses:
        figure.add_legend(status, _swatch("bar", STATUS_COLOURS[status]))
    return figure.render()
