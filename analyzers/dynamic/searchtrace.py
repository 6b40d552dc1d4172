"""A compact record of one search, for the report page's plot of how the search closed in.

The search minimises the op's suspect objective (`suspect.py`), which is <= 0 exactly where
the op turns NaN/Inf: 0 is the invalid boundary the page draws. Every evaluation the search
judges goes in, with the seconds since the search began, the stage and whether it began a
restart (a fresh draw from the box, or a new start of the gradient steps). A search runs
thousands of evaluations, so the record thins itself to about `MAX_POINTS`: restarts, stage
changes and the last point always stay (up to half the cap), the others every k-th, k doubling
whenever the record is full. Deterministic given the evaluations; a list append per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

BOUNDARY = 0.0  # the objective's value where the op fails (suspect.py: "<= 0 exactly when")
MAX_POINTS = 200


def _compact(value: float) -> float | None:
    """Six significant digits; None for a value the search could not compute (inf/nan)."""
    if not math.isfinite(value):
        return None
    return float(f"{value:.6g}")


@dataclass
class _Point:
    evaluation: int
    seconds: float
    value: float | None
    best: float | None
    stage: str
    restart: bool
    anchor: bool  # kept whatever the thinning
    ordinal: int  # position among the ordinary points (thinning keeps every k-th)

    def to_json(self) -> dict[str, Any]:
        return {
            "evaluation": self.evaluation,
            "seconds": round(self.seconds, 4),
            "value": self.value,
            "best": self.best,
            "stage": self.stage,
            "restart": self.restart,
        }


class SearchTrace:
    """The points of one search; `add` per judged evaluation, `to_json` for the trigger."""

    def __init__(self, objective: str, cap: int = MAX_POINTS) -> None:
        self.objective = objective
        self.cap = max(4, cap)
        self.points: list[_Point] = []
        self.stride = 1
        self.ordinary = 0
        self.anchors = 0
        self.seen = 0
        self.best = math.inf
        self._stage: str | None = None

    def add(
        self,
        evaluation: int,
        seconds: float,
        value: float,
        stage: str,
        *,
        restart: bool = False,
        last: bool = False,
    ) -> None:
        self.seen += 1
        if math.isfinite(value) and value < self.best:
            self.best = value
        changed = stage != self._stage
        self._stage = stage
        anchor = last or ((restart or changed) and self.anchors < self.cap // 2)
        if not anchor:
            self.ordinary += 1
            if self.ordinary % self.stride:
                return
        else:
            self.anchors += 1
        self.points.append(
            _Point(
                evaluation,
                seconds,
                _compact(value),
                _compact(self.best),
                stage,
                restart,
                anchor,
                self.ordinary,
            )
        )
        if len(self.points) > self.cap:
            self._thin()

    def _thin(self) -> None:
        """Keep every other ordinary point (by ordinal), and only every 2k-th from now on."""
        while len(self.points) > self.cap and self.stride < 1 << 30:
            self.stride *= 2
            self.points = [p for p in self.points if p.anchor or p.ordinal % self.stride == 0]

    def to_json(self, triggered: bool) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "boundary": BOUNDARY,
            "triggered": triggered,
            "evaluations_seen": self.seen,
            "kept_every": self.stride,
            "points": [p.to_json() for p in self.points],
        }
