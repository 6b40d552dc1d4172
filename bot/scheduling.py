"""Scheduling analyses: record one and enqueue it (superseding the PR's older ones), cancel a
PR's, re-enqueue what the broker lost (the outbox reaper, bot/outbox.py), and hold back an
installation that is at its share while others wait. Called by the web's feature routers and
by the tasks; tasks are sent by name, so nothing here imports them."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from bot import outbox
from bot.analyses import MAX_DELIVERIES, fail_analysis
from bot.db import after_commit, session_scope
from bot.models import Analysis
from bot.settings import Settings
from bot.worker import celery_app

log = logging.getLogger("numcheck.worker")

ACTIVE = ("queued", "running", "analysed")

COALESCE_SECONDS = 60


def schedule_analysis(
    settings: Settings,
    *,
    installation_id: int,
    repo: str,
    number: int,
    head_sha: str,
    base_sha: str = "",
    reason: str,
    delivery: str = "",
    coalesce: bool = False,
) -> str:
    """Record an analysis of (repo, PR, head) and enqueue it; older active analyses of the
    PR are superseded. With `coalesce`, an identical request made in the last minute that is
    still waiting or running is reused."""
    now = datetime.now(UTC)
    with session_scope(settings.database_url) as s:
        if coalesce:
            for a in s.scalars(select(Analysis).where(*_active(repo, number))).all():
                if (
                    a.head_sha == head_sha
                    and a.status in ("queued", "running")
                    and now - _aware(a.created_at) < timedelta(seconds=COALESCE_SECONDS)
                ):
                    return f"coalesced with analysis {a.id}"
        connection = s.connection()
        stale = _end_active(connection, repo, number, "superseded", now)
        analysis_id = connection.execute(
            _RECORD,
            {
                "installation_id": installation_id,
                "repo": repo,
                "pr_number": number,
                "head_sha": head_sha,
                "base_sha": base_sha,
                "status": "queued",
                "reason": reason,
                "delivery_id": delivery,
                "timings": {},
                "publish_state": {},
                "created_at": now,
                "updated_at": now,
            },
        ).scalar_one()
        task_id = f"numcheck-analysis-{analysis_id}-static"
        connection.execute(_NAME_TASK, {"analysis": analysis_id, "task": task_id})

    def enqueue() -> None:
        try:
            celery_app.send_task(
                "numcheck.analyze", args=[analysis_id, "static"], queue="static", task_id=task_id
            )
        except Exception as exc:  # noqa: BLE001 - the row is committed: the reaper enqueues it
            log.warning(
                "analysis %s recorded but not enqueued (%s); the outbox reaper will",
                analysis_id,
                exc,
            )
        _revoke(stale)

    after_commit(enqueue)
    return f"queued analysis {analysis_id}"


def cancel_pull(settings: Settings, repo: str, number: int) -> str:
    with session_scope(settings.database_url) as s:
        stale = _end_active(s.connection(), repo, number, "cancelled", datetime.now(UTC))
    after_commit(lambda: _revoke(stale))
    return f"cancelled {len(stale)} analysis(es)"


def _active(repo: str, number: int) -> tuple[ColumnElement[bool], ...]:
    return (Analysis.repo == repo, Analysis.pr_number == number, Analysis.status.in_(ACTIVE))


# The web runs these for every delivery: built once, since building a statement costs more
# than running it, and run on the session's connection without the ORM's bookkeeping.
_ANALYSES: Table = Analysis.__table__  # type: ignore[assignment]  # a Table, typed as FromClause
_END_ACTIVE = (
    update(_ANALYSES)
    .where(
        _ANALYSES.c.repo == bindparam("pull_repo"),
        _ANALYSES.c.pr_number == bindparam("pull_number"),
        _ANALYSES.c.status.in_(ACTIVE),
    )
    .values(status=bindparam("new_status"), updated_at=bindparam("now"))
    .returning(_ANALYSES.c.task_id)
)
_RECORD = insert(_ANALYSES).returning(_ANALYSES.c.id)
_NAME_TASK = (
    update(_ANALYSES)
    .where(_ANALYSES.c.id == bindparam("analysis"))
    .values(task_id=bindparam("task"))
)


def _end_active(
    connection: Connection, repo: str, number: int, status: str, now: datetime
) -> list[str]:
    """Give the PR's active analyses `status` in one statement; their task ids."""
    ended = connection.execute(
        _END_ACTIVE, {"pull_repo": repo, "pull_number": number, "new_status": status, "now": now}
    ).scalars()
    return [task_id for task_id in ended if task_id]


def _revoke(task_ids: list[str]) -> None:
    """Best effort: a queued task is dropped by the workers; a running one sees its row's
    status before it publishes anything."""
    if not task_ids:
        return
    try:
        celery_app.control.revoke(task_ids)
    except Exception as exc:  # noqa: BLE001 - the row's status is what really stops it
        log.info("revoke of %s not broadcast: %s", task_ids, exc)


def reap(settings: Settings, now: datetime | None = None) -> list[str]:
    """Enqueue again every analysis stuck past the deadline, under its deterministic task id;
    past MAX_DELIVERIES re-enqueues, fail it visibly. What was done, one line each."""
    done: list[str] = []
    for row in outbox.claim_stuck(settings, now):
        if row.requeues + 1 > MAX_DELIVERIES:
            log.error(
                "analysis %s: stuck in %s after %s re-enqueues, giving up",
                row.id,
                row.status,
                row.requeues,
            )
            fail_analysis(
                row,
                f"it was enqueued {row.requeues + 1} times and never finished (the "
                "broker lost it, or no worker took it up), so numcheck stopped "
                "trying. Push a new commit or comment `/numcheck rerun` to try again.",
                create=True,
            )
            done.append(f"analysis {row.id}: failed after {row.requeues} re-enqueues")
            continue
        try:
            if row.status == "analysed":
                celery_app.send_task(
                    "numcheck.publish",
                    args=[row.id],
                    queue="static",
                    task_id=f"numcheck-publish-{row.id}",
                )
            else:
                stage = "dynamic" if row.task_id.endswith("-dynamic") else "static"
                celery_app.send_task(
                    "numcheck.analyze",
                    args=[row.id, stage],
                    queue=stage,
                    task_id=row.task_id or f"numcheck-analysis-{row.id}-static",
                )
        except Exception as exc:  # noqa: BLE001 - the next round tries again
            log.warning("analysis %s: could not enqueue it again: %s", row.id, exc)
            done.append(f"analysis {row.id}: broker unreachable")
            continue
        log.warning(
            "analysis %s: no progress in %s, enqueued again (%s of %s)",
            row.id,
            row.status,
            row.requeues + 1,
            MAX_DELIVERIES,
        )
        done.append(f"analysis {row.id}: enqueued again from {row.status}")
    return done


def outbox_round(settings: Settings) -> None:
    reap(settings)
    pruned = outbox.prune(settings)
    if any(pruned):
        log.info("pruned %s deliveries and %s analyses", *pruned)


def start_reaper(settings: Settings) -> outbox.Reaper:
    return outbox.Reaper(settings, lambda: outbox_round(settings)).start()


# A deferred analysis comes back this soon: a deferral costs a worker about 10 ms, while a
# longer wait left workers idle with every message held back (2 s: 84 PRs a minute in
# bench.app --scale, 0.5 s: 139, no fairness: 145)
FAIRNESS_DEFER_SECONDS = 0.5
SERVED_WINDOW = timedelta(hours=1)  # service older than this does not count against anyone
# Taking turns holds an analysis back this long at most: a waiting installation whose broker
# message was lost (the outbox reaper sends it again only after minutes) must not stall
# everyone else's work until then
TURN_WAIT_AT_MOST = timedelta(minutes=2)


def defer_for_fairness(settings: Settings, row: Analysis) -> bool:
    """Should this analysis wait its turn while other installations' analyses wait?

    Two rules, both only while another installation has an analysis queued that no worker
    has taken up:
    - its installation already has `installation_concurrency` analyses taken up and not yet
      analysed: one installation pushing fifty PRs holds that many workers, not all of them;
    - its installation was served (had an analysis taken up) more recently than one of the
      waiting installations: installations take turns, least recently served first, so a
      quiet installation's PR waits behind no more of a noisy one's than were already
      running, wherever it sits in the broker's queue.

    The installation served least recently among those waiting never waits, so every
    analysis is reached, and no analysis waits for turns longer than TURN_WAIT_AT_MOST. An
    installation alone uses every worker. Proceeding stamps the row's `started_at` in the
    same transaction (the next decision sees it at once)."""
    cap = settings.installation_concurrency
    if cap <= 0:
        return False
    now = datetime.now(UTC)
    mine = row.installation_id
    with session_scope(settings.database_url) as s:
        waiting = set(
            s.scalars(
                select(Analysis.installation_id)
                .where(
                    Analysis.installation_id != mine,
                    Analysis.status == "queued",
                    Analysis.started_at.is_(None),
                )
                .distinct()
            )
        )
        if waiting and _busy(s, mine, row.id) >= cap:
            return True
        if waiting and now - _aware(row.created_at) < TURN_WAIT_AT_MOST:
            served = dict(
                s.execute(
                    select(Analysis.installation_id, func.max(Analysis.started_at))
                    .where(
                        Analysis.installation_id.in_([mine, *waiting]),
                        Analysis.id != row.id,
                        Analysis.started_at > now - SERVED_WINDOW,
                    )
                    .group_by(Analysis.installation_id)
                ).all()
            )
            last = served.get(mine)
            if last is not None and any(_served_before(served.get(i), last) for i in waiting):
                return True
        current = s.get(Analysis, row.id)
        if current is not None and current.started_at is None:
            current.started_at = now
    return False


def _aware(when: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; they were written in UTC."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _served_before(when: datetime | None, last: datetime) -> bool:
    return when is None or when < last


def _busy(s: Session, installation_id: int, other_than: int) -> int:
    """The installation's analyses taken up by a worker and not yet analysed."""
    return (
        s.scalar(
            select(func.count())
            .select_from(Analysis)
            .where(
                Analysis.installation_id == installation_id,
                Analysis.id != other_than,
                or_(
                    Analysis.status == "running",
                    and_(Analysis.status == "queued", Analysis.started_at.is_not(None)),
                ),
            )
        )
        or 0
    )
