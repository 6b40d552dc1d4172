"""The database as the source of truth for work: what recovers an analysis whose message was
lost, and what forgets old work.

The web acknowledges a delivery only after the analysis row is committed (`queued`); the
broker message that follows is a wake-up call, not the record. A message can still vanish (a
broker restarted without persistence, a worker killed between receiving and acknowledging
where the transport does not redeliver, the embedded broker's start-up). So `numcheck serve`
and every worker run a reaper: an analysis that made no progress for
`settings.reap_deadline` seconds in `queued`, `running` or `analysed` is enqueued again under
its deterministic task id. Several reapers may run at once; a conditional update lets only
one of them take a given row each time. Each re-enqueue counts in `analyses.requeues`; past
`MAX_DELIVERIES` the analysis fails visibly (a neutral check run saying why) instead of
looping. A duplicate message does no harm: the analysis task re-reads its row and skips
finished work, and publishing records what already went out (bot/publish.py).

The same loop prunes deliveries and finished analyses older than `settings.retention_days`.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy import CursorResult, delete, select, update

from bot.db import session_scope
from bot.models import Analysis, Delivery
from bot.settings import Settings

log = logging.getLogger("numcheck.outbox")

UNFINISHED = ("queued", "running", "analysed")
FINISHED = ("published", "superseded", "cancelled", "failed")
BATCH = 200


def declare_queues() -> None:
    """Declare every queue and its binding on the broker, so that a message published before
    any worker is up is routed to its queue rather than dropped as unroutable."""
    from bot.tasks import celery_app

    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=3)
        channel = conn.default_channel
        for queue in celery_app.conf.task_queues:
            queue.bind(channel).declare()


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def reap(settings: Settings, now: datetime | None = None) -> list[str]:
    """Enqueue again every analysis stuck past the deadline; what was done, one line each."""
    from bot.tasks import MAX_DELIVERIES, _fail, celery_app

    now = now or datetime.now(UTC)
    cutoff = now - timedelta(seconds=settings.reap_deadline)
    with session_scope(settings.database_url) as s:
        stuck = s.scalars(select(Analysis).where(
            Analysis.status.in_(UNFINISHED), Analysis.updated_at < cutoff)
            .order_by(Analysis.id).limit(BATCH)).all()
    done: list[str] = []
    for row in stuck:
        with session_scope(settings.database_url) as s:  # only one reaper takes the row
            result = s.execute(update(Analysis).where(
                Analysis.id == row.id, Analysis.status == row.status,
                Analysis.requeues == row.requeues, Analysis.updated_at < cutoff)
                .values(requeues=row.requeues + 1, updated_at=now))
            taken = isinstance(result, CursorResult) and result.rowcount == 1
        if not taken:
            continue
        if row.requeues + 1 > MAX_DELIVERIES:
            log.error("analysis %s: stuck in %s after %s re-enqueues, giving up", row.id,
                      row.status, row.requeues)
            _fail(row, f"it was enqueued {row.requeues + 1} times and never finished (the "
                       "broker lost it, or no worker took it up), so numcheck stopped "
                       "trying. Push a new commit or comment `/numcheck rerun` to try again.",
                  create=True)
            done.append(f"analysis {row.id}: failed after {row.requeues} re-enqueues")
            continue
        try:
            if row.status == "analysed":
                celery_app.send_task("numcheck.publish", args=[row.id], queue="static",
                                     task_id=f"numcheck-publish-{row.id}")
            else:
                stage = "dynamic" if row.task_id.endswith("-dynamic") else "static"
                celery_app.send_task("numcheck.analyze", args=[row.id, stage], queue=stage,
                                     task_id=row.task_id or f"numcheck-analysis-{row.id}-static")
        except Exception as exc:  # noqa: BLE001 - the next round tries again
            log.warning("analysis %s: could not enqueue it again: %s", row.id, exc)
            done.append(f"analysis {row.id}: broker unreachable")
            continue
        log.warning("analysis %s: no progress in %s since %s, enqueued again (%s of %s)",
                    row.id, row.status, _aware(row.updated_at).isoformat(), row.requeues + 1,
                    MAX_DELIVERIES)
        done.append(f"analysis {row.id}: enqueued again from {row.status}")
    return done


def prune(settings: Settings, now: datetime | None = None) -> tuple[int, int]:
    """Delete deliveries and finished analyses (with their findings) older than the retention
    period; (deliveries, analyses) deleted."""
    now = now or datetime.now(UTC)
    cutoff = now - timedelta(days=settings.retention_days)
    with session_scope(settings.database_url) as s:
        result = s.execute(delete(Delivery).where(Delivery.received_at < cutoff))
        deliveries = result.rowcount if isinstance(result, CursorResult) else 0
        old = s.scalars(select(Analysis).where(
            Analysis.status.in_(FINISHED), Analysis.updated_at < cutoff).limit(BATCH)).all()
        for row in old:
            s.delete(row)  # the ORM cascade takes its findings, on SQLite too
    return int(deliveries or 0), len(old)


class Reaper:
    """A daemon thread that reaps and prunes every `settings.reap_interval` seconds."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
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
                reap(self.settings)
                pruned = prune(self.settings)
                if any(pruned):
                    log.info("pruned %s deliveries and %s analyses", *pruned)
            except Exception as exc:  # noqa: BLE001 - a database hiccup: try next round
                log.warning("outbox round failed: %s", exc)
