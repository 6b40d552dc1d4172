"""What the App's benchmarks measure with: a percentile of latencies, and every process's CPU
time from /proc (bench/app.py, bench/app_scale.py, bench/app_ack.py)."""

from __future__ import annotations

import os
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank `q`th percentile of `values`."""
    ordered = sorted(values)
    return ordered[min(int(round(q / 100 * (len(ordered) - 1))), len(ordered) - 1)]


def process_cpu() -> dict[int, tuple[str, int, float]]:
    """Every process's (name, parent pid, CPU seconds: own and reaped children's), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[str, int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        cpu = sum(int(f) for f in fields[11:15]) / ticks  # utime stime cutime cstime
        stats[int(entry.name)] = (comm, int(fields[1]), cpu)
    return stats
