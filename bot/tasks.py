"""The Celery app and the worker's tasks.

Queues: `static` (CPU: fetch, static pass, publishing, commands) and `dynamic` (the sandboxed
dynamic pass; GPU workers in production). Tasks are acknowledged late with a prefetch of one, so
a worker that dies mid-task leaves its task to be redelivered (Redis's visibility timeout is
set above the longest job); every task first re-reads its analysis row and GitHub's view of
the PR, so a redelivered, superseded or cancelled task does nothing twice. A task whose worker
process keeps dying (a native crash on the PR's code, the hard time limit) is taken up at most
`MAX_DELIVERIES` times: the analysis row counts the deliveries that never ended, and the next
one completes the check run with the reason instead of running again.

Start a worker with `celery -A bot.tasks worker -Q static,dynamic` (settings from the
environment, see bot/settings.py).
"""

from __future__ import annotations

import logging
import random
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from celery import Celery, Task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_ready, worker_shutdown
from kombu import Queue
from sqlalchemy import func, select, update

from bot import outbox
from bot.broker import TRANSPORT
from bot.db import engine_for, session_scope
from bot.github import GitHubClient, TokenCache, is_transient, retry_after
from bot.models import Analysis, FindingRow
from bot.settings import Settings, from_env

log = logging.getLogger("numcheck.worker")

ACTIVE = ("queued", "running", "analysed")
MAX_DELIVERIES = 3
"""Deliveries of one analysis task that may start and never end (the worker process died:
acks_late with reject_on_worker_lost puts the message straight back). Past this, the next
delivery fails the analysis visibly and acknowledges the message, so a file that kills the
process cannot crash worker after worker. Retries of transient GitHub errors end in Python
and are counted by Celery's `retries` (settings.max_retries), not here."""
COALESCE_SECONDS = 60
QUEUES = ("static", "dynamic")

_bound: Settings | None = None


def bind_settings(settings: Settings) -> None:
    """Use these settings in this process (the web app and `numcheck serve` call it before
    anything touches the Celery configuration)."""
    global _bound
    previous, _bound = _bound, settings
    _tokens.cache_clear()
    if previous is not None and celery_app.configured and \
            celery_config(previous) != celery_config(settings):
        celery_app.conf.update(celery_config(settings))
        celery_app._after_fork()  # drop the connections and producers of the old broker


def get_settings() -> Settings:
    global _bound
    if _bound is None:
        _bound = from_env()
    return _bound


def celery_config(settings: Settings) -> dict[str, Any]:
    transport: dict[str, Any] = {"visibility_timeout": settings.visibility_timeout}
    if settings.broker_prefix:
        transport["global_keyprefix"] = settings.broker_prefix
    if settings.broker_url.startswith("filesystem://"):
        folder = settings.broker_folder
        transport.update(data_folder_in=folder, data_folder_out=folder,
                         control_folder=folder + "/control", store_processed=False)
    return {
        "broker_url": settings.broker_url,
        # kombu's filesystem channel without its start-up races (bot/broker.py)
        "broker_transport": TRANSPORT if settings.broker_url.startswith("filesystem://")
        else None,
        "broker_transport_options": transport,
        "broker_connection_retry_on_startup": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_soft_time_limit": settings.soft_time_limit,
        "task_time_limit": settings.hard_time_limit,
        "task_default_queue": "static",
        "task_queues": tuple(Queue(name) for name in QUEUES),
        "task_ignore_result": True,
        "task_serializer": "json",
        "accept_content": ["json"],
        "worker_hijack_root_logger": False,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
    }


celery_app = Celery("numcheck", set_as_current=False)
celery_app.add_defaults(lambda: celery_config(get_settings()))


@lru_cache(maxsize=1)
def _tokens() -> TokenCache:
    return TokenCache(get_settings())


def client_for(installation_id: int) -> GitHubClient:
    return GitHubClient(get_settings(), _tokens(), installation_id)


# --- scheduling (called by the web's feature routers and by tasks) -------------------------
def schedule_analysis(settings: Settings, *, installation_id: int, repo: str, number: int,
                      head_sha: str, base_sha: str = "", reason: str, delivery: str = "",
                      coalesce: bool = False) -> str:
    """Record an analysis of (repo, PR, head) and enqueue it; older active analyses of the
    PR are superseded. With `coalesce`, an identical request made in the last minute that is
    still waiting or running is reused."""
    now = datetime.now(UTC)
    with session_scope(settings.database_url) as s:
        active = s.scalars(select(Analysis).where(
            Analysis.repo == repo, Analysis.pr_number == number,
            Analysis.status.in_(ACTIVE))).all()
        if coalesce:
            for a in active:
                created = a.created_at if a.created_at.tzinfo else a.created_at.replace(
                    tzinfo=UTC)
                if a.head_sha == head_sha and a.status in ("queued", "running") and \
                        now - created < timedelta(seconds=COALESCE_SECONDS):
                    return f"coalesced with analysis {a.id}"
        stale = [a.task_id for a in active if a.task_id]
        for a in active:
            a.status = "superseded"
        row = Analysis(installation_id=installation_id, repo=repo, pr_number=number,
                       head_sha=head_sha, base_sha=base_sha, status="queued", reason=reason,
                       delivery_id=delivery, timings={}, publish_state={})
        s.add(row)
        s.flush()
        row.task_id = f"numcheck-analysis-{row.id}-static"
        analysis_id, task_id = row.id, row.task_id
    try:
        celery_app.send_task("numcheck.analyze", args=[analysis_id, "static"], queue="static",
                             task_id=task_id)
    except Exception as exc:  # noqa: BLE001 - the row is committed: the reaper enqueues it
        log.warning("analysis %s recorded but not enqueued (%s); the outbox reaper will",
                    analysis_id, exc)
    _revoke(stale)
    return f"queued analysis {analysis_id}"


def cancel_pull(settings: Settings, repo: str, number: int) -> str:
    with session_scope(settings.database_url) as s:
        active = s.scalars(select(Analysis).where(
            Analysis.repo == repo, Analysis.pr_number == number,
            Analysis.status.in_(ACTIVE))).all()
        stale = [a.task_id for a in active if a.task_id]
        for a in active:
            a.status = "cancelled"
    _revoke(stale)
    return f"cancelled {len(stale)} analysis(es)"


def _revoke(task_ids: list[str]) -> None:
    """Best effort: a queued task is dropped by the workers; a running one sees its row's
    status before it publishes anything."""
    if not task_ids:
        return
    try:
        celery_app.control.revoke(task_ids)
    except Exception as exc:  # noqa: BLE001 - the row's status is what really stops it
        log.info("revoke of %s not broadcast: %s", task_ids, exc)


# --- the outbox: re-enqueue what was lost (bot/outbox.py) ------------------------------------
def declare_queues() -> None:
    """Declare every queue and its binding on the broker, so that a message published before
    any worker is up is routed to its queue rather than dropped as unroutable."""
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=3)
        channel = conn.default_channel
        for queue in celery_app.conf.task_queues:
            queue.bind(channel).declare()


def reap(settings: Settings, now: datetime | None = None) -> list[str]:
    """Enqueue again every analysis stuck past the deadline, under its deterministic task id;
    past MAX_DELIVERIES re-enqueues, fail it visibly. What was done, one line each."""
    done: list[str] = []
    for row in outbox.claim_stuck(settings, now):
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
        log.warning("analysis %s: no progress in %s, enqueued again (%s of %s)", row.id,
                    row.status, row.requeues + 1, MAX_DELIVERIES)
        done.append(f"analysis {row.id}: enqueued again from {row.status}")
    return done


def outbox_round(settings: Settings) -> None:
    reap(settings)
    pruned = outbox.prune(settings)
    if any(pruned):
        log.info("pruned %s deliveries and %s analyses", *pruned)


def start_reaper(settings: Settings) -> outbox.Reaper:
    return outbox.Reaper(settings, lambda: outbox_round(settings)).start()


_reaper: outbox.Reaper | None = None


@worker_ready.connect
def _start_reaper(**_: Any) -> None:
    """Every worker also re-enqueues stuck analyses: work is recovered while any worker runs,
    with no beat process to deploy."""
    global _reaper
    _reaper = start_reaper(get_settings())


@worker_shutdown.connect
def _stop_reaper(**_: Any) -> None:
    if _reaper is not None:
        _reaper.stop()


@worker_process_init.connect
def _fresh_connections(**_: Any) -> None:
    """A pool process forked from a worker whose reaper used the database must not share
    the parent's pooled connections."""
    engine_for(get_settings().database_url).dispose(close=False)


# --- tasks -------------------------------------------------------------------------------------
def _backoff(task: Task, exc: BaseException) -> float:
    settings = get_settings()
    from github import GithubException

    asked = retry_after(exc) if isinstance(exc, GithubException) else None
    base = settings.retry_base_seconds * (2 ** task.request.retries)
    return max(asked or 0.0, base * (0.75 + random.random() / 2))


def _retryable(exc: BaseException, installation_id: int) -> bool:
    """Transient errors, and a 401 from a cached token that GitHub no longer accepts (it is
    dropped, and the retry mints a new one)."""
    from github import GithubException

    if isinstance(exc, GithubException) and exc.status == 401:
        _tokens().forget(installation_id)
        return True
    return is_transient(exc)


def load_analysis(analysis_id: int) -> Analysis | None:
    with session_scope(get_settings().database_url) as s:
        return s.get(Analysis, analysis_id)


# Where a row that a close or a newer push stopped stays: a worker still running it must not
# bring it back to life (it checked `still_wanted` before the close arrived).
STOPPED = ("superseded", "cancelled")


def update_analysis(analysis_id: int, **values: Any) -> bool:
    """Set the row's columns in one transaction. A status change of a stopped row is refused
    (nothing is written) and False returned: the caller's work is no longer wanted."""
    with session_scope(get_settings().database_url) as s:
        row = s.get(Analysis, analysis_id, with_for_update=True)
        if row is None:
            return False
        if "status" in values and row.status in STOPPED and values["status"] not in STOPPED:
            return False
        for key, value in values.items():
            setattr(row, key, value)
        return True


def still_wanted(row: Analysis) -> bool:
    """False when the row was superseded or cancelled, or a newer analysis of the PR exists."""
    with session_scope(get_settings().database_url) as s:
        current = s.get(Analysis, row.id)
        if current is None or current.status in STOPPED:
            return False
        newer = s.scalar(select(Analysis.id).where(
            Analysis.repo == row.repo, Analysis.pr_number == row.pr_number,
            Analysis.id > row.id).limit(1))
        if newer is not None:
            current.status = "superseded"
            return False
    return True


FAIRNESS_DEFER_SECONDS = 2.0


def defer_for_fairness(settings: Settings, row: Analysis) -> bool:
    """Should this analysis wait its turn? Yes when its installation already has
    `installation_concurrency` analyses running and another installation's analysis is
    queued: one installation pushing fifty PRs then holds that many workers, not all of them,
    and a quiet installation's PR starts next. An installation alone uses every worker."""
    cap = settings.installation_concurrency
    if cap <= 0:
        return False
    with session_scope(settings.database_url) as s:
        running = s.scalar(select(func.count()).select_from(Analysis).where(
            Analysis.installation_id == row.installation_id, Analysis.id != row.id,
            Analysis.status == "running")) or 0
        if running < cap:
            return False
        waiting = s.scalar(select(func.count()).select_from(Analysis).where(
            Analysis.installation_id != row.installation_id, Analysis.status == "queued"))
    return bool(waiting)


@celery_app.task(bind=True, name="numcheck.analyze", max_retries=None)
def analyze_task(self: Task, analysis_id: int, stage: str = "static") -> str:
    from bot import jobs

    settings = get_settings()
    row = load_analysis(analysis_id)
    if row is None:
        return "unknown analysis"
    if row.status in ("published", "analysed", "failed"):  # a redelivery of finished work
        return f"already {row.status}"
    if not still_wanted(row):
        cancel_check_run(row, "Superseded by a newer push or cancelled")
        return "superseded"
    if stage == "static" and defer_for_fairness(settings, row):
        celery_app.send_task("numcheck.analyze", args=[analysis_id, stage], queue="static",
                             task_id=self.request.id, countdown=FAIRNESS_DEFER_SECONDS)
        return "deferred: its installation is at its share while others wait"
    delivery = begin_delivery(analysis_id)
    if delivery > MAX_DELIVERIES:
        log.error("analysis %s: delivery %s; the %s before never finished, giving up",
                  analysis_id, delivery, delivery - 1)
        _fail(row, f"the worker process running it died {delivery - 1} times without "
                   "finishing (a crash of the analysis on this push's code, or its "
                   f"{settings.hard_time_limit} s hard time limit), so numcheck stopped "
                   "trying. Push a new commit or comment `/numcheck rerun` to try again.",
              create=True)
        return "gave up"
    try:
        return jobs.run_analysis(settings, row, stage, client_for(row.installation_id))
    except SoftTimeLimitExceeded:
        _fail(row, f"the analysis ran past its {settings.soft_time_limit} s limit")
        return "timed out"
    except Exception as exc:
        if _retryable(exc, row.installation_id) and self.request.retries < settings.max_retries:
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        log.exception("analysis %s failed", analysis_id)
        _fail(row, f"{type(exc).__name__}: {exc}")
        return "failed"
    finally:
        end_delivery(analysis_id)


def begin_delivery(analysis_id: int) -> int:
    """Count one more delivery of the analysis task that started work; the count so far."""
    with session_scope(get_settings().database_url) as s:
        s.execute(update(Analysis).where(Analysis.id == analysis_id)
                  .values(deliveries=Analysis.deliveries + 1))
        return int(s.scalar(select(Analysis.deliveries).where(Analysis.id == analysis_id))
                   or 0)


def end_delivery(analysis_id: int) -> None:
    """The delivery ended in Python (done, failed or retried): it was no crash."""
    try:
        update_analysis(analysis_id, deliveries=0)
    except Exception as exc:  # noqa: BLE001 - the task's own outcome matters more
        log.warning("analysis %s: could not reset its delivery count: %s", analysis_id, exc)


@celery_app.task(bind=True, name="numcheck.publish", max_retries=None)
def publish_task(self: Task, analysis_id: int) -> str:
    from bot import jobs

    settings = get_settings()
    row = load_analysis(analysis_id)
    if row is None or row.status == "published":
        return "nothing to publish"
    if not still_wanted(row):
        cancel_check_run(row, "Superseded by a newer push or cancelled")
        return "superseded"
    try:
        return jobs.publish_analysis(settings, row, client_for(row.installation_id))
    except Exception as exc:
        if _retryable(exc, row.installation_id) and self.request.retries < settings.max_retries:
            log.info("publish %s: transient %s, retrying", analysis_id, exc)
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        log.exception("publish %s failed", analysis_id)
        _fail(row, f"publishing failed: {type(exc).__name__}: {exc}")
        return "failed"


@celery_app.task(bind=True, name="numcheck.command", max_retries=None)
def command_task(self: Task, payload: dict[str, Any]) -> str:
    from bot.features import commands

    settings = get_settings()
    try:
        installation = int(payload["installation"]["id"])
        return commands.run_command(settings, payload, client_for(installation))
    except Exception as exc:
        if is_transient(exc) and self.request.retries < settings.max_retries:
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        raise


@celery_app.task(bind=True, name="numcheck.find_pull", max_retries=None)
def find_pull_task(self: Task, installation_id: int, repo: str, head_sha: str,
                   reason: str) -> str:
    """check_run/check_suite rerequested on a fork PR: its payload lists no pull request, so
    look the head SHA up among the open PRs."""
    settings = get_settings()
    try:
        client = client_for(installation_id)
        for pull in client.open_pulls(repo):
            if pull.get("head", {}).get("sha") == head_sha:
                return schedule_analysis(settings, installation_id=installation_id,
                                         repo=repo, number=int(pull["number"]),
                                         head_sha=head_sha,
                                         base_sha=str(pull["base"]["sha"]), reason=reason,
                                         coalesce=True)
        return "no open pull request has that head"
    except Exception as exc:
        if is_transient(exc) and self.request.retries < settings.max_retries:
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        raise


def _fail(row: Analysis, message: str, create: bool = False) -> None:
    """Mark the analysis failed and complete its check run (neutral) with the reason; with
    `create`, a check run is made when the analysis never got as far as making one."""
    update_analysis(row.id, status="failed", error=message[:5000])
    current = load_analysis(row.id)
    if current is None or (current.check_run_id is None and not create):
        return
    try:
        from bot.publish import finish_check_run

        client = client_for(row.installation_id)
        run_id = current.check_run_id
        if run_id is None:
            run_id = open_check_run(client, current, get_settings().check_name,
                                    "numcheck could not finish")
            update_analysis(row.id, check_run_id=run_id)
        finish_check_run(client, row.repo, run_id,
                         conclusion="neutral", title="numcheck could not finish",
                         summary=f"The analysis of `{row.head_sha[:12]}` stopped: {message}")
        update_analysis(row.id, publish_state={**current.publish_state,
                                               "check_completed": True})
    except Exception as exc:  # noqa: BLE001 - reporting the failure must not raise
        log.warning("could not report failure of analysis %s: %s", row.id, exc)


# What a person asked to run again: GitHub's documented answer to `rerequested` is a new check
# run, and whoever typed `/numcheck rerun` expects to watch one start; the old run stays as it
# ended. A push reuses the head's run instead (one head, one run).
RERUN_REASONS = ("command.rerun", "check_run.rerequested", "check_suite.rerequested")


def open_check_run(client: GitHubClient, row: Analysis, name: str, text: str) -> int:
    """The analysis's check run, set in progress with `text`: the one it already has; for a
    re-run without one, a new run; otherwise the head's run (found by name) or a new one."""
    from bot.publish import ensure_check_run, in_progress_body

    if row.check_run_id is None and row.reason in RERUN_REASONS:
        return int(client.create_check_run(row.repo, in_progress_body(row.head_sha, name,
                                                                      text))["id"])
    return ensure_check_run(client, row.repo, row.head_sha, name, text, row.check_run_id)


def cancel_check_run(row: Analysis, why: str) -> None:
    current = load_analysis(row.id)
    if current is None or current.check_run_id is None or \
            current.publish_state.get("check_completed"):
        return
    try:
        from bot.publish import finish_check_run

        finish_check_run(client_for(row.installation_id), row.repo, current.check_run_id,
                         conclusion="cancelled", title=why, summary=why)
        update_analysis(row.id, publish_state={**current.publish_state, "check_completed": True})
    except Exception as exc:  # noqa: BLE001
        log.warning("could not cancel check run of analysis %s: %s", row.id, exc)


def save_findings(analysis_id: int, findings: list[dict[str, Any]]) -> None:
    with session_scope(get_settings().database_url) as s:
        row = s.get(Analysis, analysis_id)
        if row is None:
            return
        row.findings.clear()
        s.flush()
        for f in findings:
            row.findings.append(FindingRow(fingerprint=f["fingerprint"], path=f["path"],
                                           line=f["line"], op=f["op"], status=f["status"]))


def set_comment_ids(analysis_id: int, ids: dict[str, int]) -> None:
    with session_scope(get_settings().database_url) as s:
        for finding in s.scalars(select(FindingRow).where(
                FindingRow.analysis_id == analysis_id)):
            finding.comment_id = ids.get(finding.fingerprint, finding.comment_id)

