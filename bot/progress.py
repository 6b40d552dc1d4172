"""Progress for long runs, on stderr: one line per stage and per finding, with elapsed time.

The static pass takes milliseconds, the dynamic pass seconds per finding (a search, a
reproducer, candidate fixes), so a review of a large PR can run for minutes: the user sees
which finding is being worked on and how long each took. The runner streams each finding's
record as it finishes (`runners.base.Runner.run(on_record=...)`); `Progress.runner` wraps a
runner to hook that stream.

Silent unless asked: the CLI enables it only when stderr is a terminal and `--quiet` is not
given, so pipes, files and pre-commit output stay clean; the GitHub Action enables it for the
workflow log (without colour).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from analyzers.model import AnalysisResult
from analyzers.report.summary import plural, status_counts
from bot.console import BOLD, DIM, STATUS_COLORS, color_enabled, is_terminal, one_line, paint
from runners.base import OnRecord, Runner, RunResult


class Progress:
    """Writes progress lines to `stream`; a Progress without a stream says nothing."""

    def __init__(
        self,
        stream: TextIO | None,
        *,
        color: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.color = color
        self.clock = clock
        self.started = clock()
        self._last = self.started
        self._total = 0
        self._done = 0
        self._where: dict[str, str] = {}

    @classmethod
    def for_cli(cls, quiet: bool, stream: TextIO | None = None) -> Progress:
        """On when `stream` (default stderr) is a terminal and not --quiet."""
        stream = stream if stream is not None else sys.stderr
        if quiet or not is_terminal(stream):
            return cls(None)
        return cls(stream, color=color_enabled(stream))

    @property
    def enabled(self) -> bool:
        return self.stream is not None

    def elapsed(self) -> float:
        return self.clock() - self.started

    def say(self, text: str) -> None:
        if self.stream is None:
            return
        stamp = paint(DIM, f"[{self.elapsed():6.1f}s]", self.color)
        self.stream.write(f"numcheck {stamp} {text}\n")
        self.stream.flush()

    def stage(self, name: str, detail: str = "") -> None:
        self.say(paint(BOLD, name, self.color) + (f": {detail}" if detail else ""))

    # ---------------------------------------------------------------- the dynamic pass

    def runner(self, inner: Runner) -> Runner:
        """`inner`, reporting each finding's record as it arrives."""
        return _ProgressRunner(inner, self)

    def dynamic_started(self, job: dict[str, Any]) -> None:
        findings = [f for f in job.get("findings", []) if isinstance(f, dict)]
        self._total = len(findings)
        self._done = 0
        self._where = {
            str(f.get("fingerprint")): f"{one_line(str(f.get('path')))}:"
            f"{f.get('line')} {one_line(str(f.get('op')))}"
            for f in findings
        }
        self.stage("static pass", f"{plural(self._total, 'finding')} to confirm")
        budget = job.get("search_seconds")
        detail = (
            f"running the code in the sandbox, up to {budget:g} s of search per finding"
            if isinstance(budget, int | float)
            else "running the code in the sandbox"
        )
        self.stage("dynamic pass", detail)
        self._last = self.clock()

    def record(self, record: dict[str, Any]) -> None:
        now = self.clock()
        took, self._last = now - self._last, now
        where = self._where.get(str(record.get("fingerprint")), "?")
        if record.get("stage") == "fix":
            raw = record.get("fix")
            fix: dict[str, Any] = raw if isinstance(raw, dict) else {}
            status = one_line(str(fix.get("status", "?")))
            kind = (
                f" {one_line(str(fix['kind']))}"
                if status == "validated" and fix.get("kind")
                else ""
            )
            shown = paint(STATUS_COLORS.get(status, ""), status, self.color)
            self.say(f"  fix for {where}: {shown}{kind} ({took:.1f} s)")
            return
        if record.get("stage") == "precision":  # the second search, after every first one
            status = one_line(str(record.get("status", "?")))
            shown = paint(STATUS_COLORS.get(status, ""), status, self.color)
            self.say(f"  in mixed precision, {where}: {shown} ({took:.1f} s)")
            return
        self._done += 1
        status = one_line(str(record.get("status", "?")))
        self.say(
            f"{self._done}/{self._total} {where}: "
            f"{paint(STATUS_COLORS.get(status, ''), status, self.color)} ({took:.1f} s)"
        )

    def dynamic_finished(self, run: RunResult) -> None:
        if run.outcome != "ok":
            self.say(
                f"dynamic pass stopped: {one_line(run.outcome)}"
                + (f" ({one_line(run.reason)[:200]})" if run.reason else "")
            )

    # ---------------------------------------------------------------- the end

    def finished(self, result: AnalysisResult) -> None:
        findings = result.findings
        if findings:
            counts = ", ".join(f"{n} {s}" for s, n in status_counts(findings))
            what = f"{plural(len(findings), 'finding')} ({counts})"
        else:
            what = "no findings"
        errors = f", {plural(len(result.errors), 'error')}" if result.errors else ""
        stages = ", ".join(
            f"{one_line(name)} {seconds:.2f} s"
            for name, seconds in result.timings.items()
            if isinstance(seconds, int | float)
        )
        self.stage(
            "done", f"{what}{errors} in {self.elapsed():.1f} s" + (f" ({stages})" if stages else "")
        )


class _ProgressRunner:
    """A Runner that reports to a Progress and hands everything else to the one it wraps."""

    def __init__(self, inner: Runner, progress: Progress) -> None:
        self.inner = inner
        self.progress = progress

    def run(
        self, job: dict[str, Any], timeout: float, on_record: OnRecord | None = None
    ) -> RunResult:
        self.progress.dynamic_started(job)

        def both(record: dict[str, Any]) -> None:
            self.progress.record(record)
            if on_record is not None:
                on_record(record)

        result = self.inner.run(job, timeout, on_record=both)
        self.progress.dynamic_finished(result)
        return result
