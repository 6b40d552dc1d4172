"""The database as the source of truth for work: what recovers an analysis whose message was
lost, and what forgets old work.

The web acknowledges a delivery only after the analysis row is committed (`queued`); the
broker message that follows is a wake-up call, not the record. A message can still vanish (a
broker restarted without persistence, a worker killed between receiving and acknowledging
where the transport does not redeliver, the embedded broker's start-up). So `numcheck serve`
and every worker run a reaper: an analysis that made no progress for
`settings.reap_deadline` seconds in `queued`, `running` or `analysed` is enqueued again under
its deterministic task id (`bot.scheduling.reap`; this module holds what needs no Celery).
Several reapers may run at once; a conditional update lets only one of them take a given row
each time. Each re-enqueue counts in `analyses.requeues`; past `MAX_DELIVERIES` the analysis
fails visibly (a neutral check run saying why) instead of looping. A duplicate message does
no harm: the analysis task re-reads its row and skips finished work, and publishing records
what already went out (bot/publish.py).

The same loop prunes deliveries and finished analyses older than `settings.retention_days`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import CursorResult, delete, select, update

from bot.db import session_scope
from bot.models import Analysis, Delivery
from bot.settings import Settings

log = logging.getLogger("numcheck.outbox")

UNFINISHED = ("queued", "running", "analysed")
FINISHED = ("published", "superseded", "cancelled", "failed")
BATCH = 200


def claim_stuck(settings: Settings, now: datetime | None = None) -> list[Analysis]:
    """The unfinished analyses that made no progress for `settings.reap_deadline` seconds,
    each claimed for this caller (its `requeues` counted, its clock restarted): a conditional
    update lets only one of several reapers take a row in a round. The rows are returned as
    they were before the claim."""
    now = now or datetime.now(UTC)
    cutoff = now - timedelta(seconds=settings.reap_deadline)
    with session_scope(settings.database_url) as s:
        stuck = s.scalars(
            select(Analysis)
            .where(Analysis.status.in_(UNFINISHED), Analysis.updated_at < cutoff)
            .order_by(Analysis.id)
            .limit(BATCH)
        ).all()
    claimed: list[Analysis] = []
    for row in stuck:
        with session_scope(settings.database_url) as s:
            result = s.execute(
                update(Analysis)
                .where(
                    Analysis.id == row.id,
                    Analysis.status == row.status,
                    Analysis.requeues == row.requeues,
                    Analysis.updated_at < cutoff,
                )
                .values(requeues=row.requeues + 1, updated_at=now)
            )
            if isinstance(result, CursorResult) and result.rowcount == 1:
                claimed.append(row)
    return claimed


def prune(settings: Settings, now: datetime | None = None) -> tuple[int, int]:
    """Delete deliveries and finished analyses (with their findings) older than the retention
    period; (deliveries, analyses) deleted."""
    now = now or datetime.now(UTC)
    cutoff = now - timedelta(days=settings.retention_days)
    with session_scope(settings.database_url) as s:
        result = s.execute(delete(Delivery).where(Delivery.received_at < cutoff))
        deliveries = result.rowcount if isinstance(result, CursorResult) else 0
        old = s.scalars(
            select(Analysis)
            .where(Analysis.status.in_(FINISHED), Analysis.updated_at < cutoff)
            .limit(BATCH)
        ).all()
        for row in old:
            s.delete(row)  # the ORM cascade takes its findings, on SQLite too
    return int(deliveries or 0), len(old)


class Reaper:
    """A daemon thread that runs `round` every `settings.reap_interval` seconds (bot.scheduling
    passes the re-enqueueing and pruning, which need the Celery app)."""

    def __init__(self, settings: Settings, round: Callable[[], object]) -> None:
        self.settings = settings
        self._round = round
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="numcheck-reaper", daemon=True)

    def start(self) -> Reaper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.settings.reap_interval):
            try:
                self._round()
            except Exception as exc:  # noqa: BLE001 - a database hiccup: try next round
                log.warning("outbox round failed: %s", exc)
