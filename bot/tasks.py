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
from typing import Any

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_ready, worker_shutdown

from bot import jobs, outbox
from bot.analyses import (
    MAX_DELIVERIES,
    begin_delivery,
    cancel_check_run,
    end_delivery,
    fail_analysis,
    load_analysis,
    still_wanted,
)
from bot.db import engine_for
from bot.features import commands
from bot.github import is_transient, retry_after
from bot.pauses import Paused
from bot.scheduling import (
    FAIRNESS_DEFER_SECONDS,
    defer_for_fairness,
    schedule_analysis,
    start_reaper,
)
from bot.worker import celery_app, client_for, forget_token, get_settings

log = logging.getLogger("numcheck.worker")

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


def _backoff(task: Task, exc: BaseException) -> float:
    settings = get_settings()
    from github import GithubException

    if isinstance(exc, Paused):  # the pause's end, spread a little: not a failure to back off
        return exc.seconds + random.random()
    asked = retry_after(exc) if isinstance(exc, GithubException) else None
    base = settings.retry_base_seconds * (2**task.request.retries)
    return max(asked or 0.0, base * (0.75 + random.random() / 2))


def _retryable(task: Task, exc: BaseException, installation_id: int | None = None) -> bool:
    """Transient errors within the retry budget, and a 401 from a cached token that GitHub no
    longer accepts (it is dropped, and the retry mints a new one). Waiting out a pause GitHub
    asked of the installation is GitHub's schedule, not a failure: it never uses up the
    budget."""
    from github import GithubException

    if isinstance(exc, Paused):
        return True
    if task.request.retries >= get_settings().max_retries:
        return False
    if installation_id is not None and isinstance(exc, GithubException) and exc.status == 401:
        forget_token(installation_id)
        return True
    return is_transient(exc)


@celery_app.task(bind=True, name="numcheck.analyze", max_retries=None)
def analyze_task(self: Task, analysis_id: int, stage: str = "static") -> str:
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
        celery_app.send_task(
            "numcheck.analyze",
            args=[analysis_id, stage],
            queue="static",
            task_id=self.request.id,
            countdown=FAIRNESS_DEFER_SECONDS,
        )
        return "deferred: another installation waits its turn"
    delivery = begin_delivery(analysis_id)
    if delivery > MAX_DELIVERIES:
        log.error(
            "analysis %s: delivery %s; the %s before never finished, giving up",
            analysis_id,
            delivery,
            delivery - 1,
        )
        fail_analysis(
            row,
            f"the worker process running it died {delivery - 1} times without "
            "finishing (a crash of the analysis on this push's code, or its "
            f"{settings.hard_time_limit} s hard time limit), so numcheck stopped "
            "trying. Push a new commit or comment `/numcheck rerun` to try again.",
            create=True,
        )
        return "gave up"
    try:
        return jobs.run_analysis(settings, row, stage, client_for(row.installation_id))
    except SoftTimeLimitExceeded:
        fail_analysis(row, f"the analysis ran past its {settings.soft_time_limit} s limit")
        return "timed out"
    except Exception as exc:
        if _retryable(self, exc, row.installation_id):
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        log.exception("analysis %s failed", analysis_id)
        fail_analysis(row, f"{type(exc).__name__}: {exc}")
        return "failed"
    finally:
        end_delivery(analysis_id)


@celery_app.task(bind=True, name="numcheck.publish", max_retries=None)
def publish_task(self: Task, analysis_id: int) -> str:
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
        if _retryable(self, exc, row.installation_id):
            log.info("publish %s: transient %s, retrying", analysis_id, exc)
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        log.exception("publish %s failed", analysis_id)
        fail_analysis(row, f"publishing failed: {type(exc).__name__}: {exc}")
        return "failed"


@celery_app.task(bind=True, name="numcheck.command", max_retries=None)
def command_task(self: Task, payload: dict[str, Any]) -> str:
    settings = get_settings()
    try:
        installation = int(payload["installation"]["id"])
        return commands.run_command(settings, payload, client_for(installation))
    except Exception as exc:
        if _retryable(self, exc):
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        raise


@celery_app.task(bind=True, name="numcheck.find_pull", max_retries=None)
def find_pull_task(self: Task, installation_id: int, repo: str, head_sha: str, reason: str) -> str:
    """check_run/check_suite rerequested on a fork PR: its payload lists no pull request, so
    look the head SHA up among the open PRs."""
    settings = get_settings()
    try:
        client = client_for(installation_id)
        for pull in client.open_pulls(repo):
            if pull.get("head", {}).get("sha") == head_sha:
                return schedule_analysis(
                    settings,
                    installation_id=installation_id,
                    repo=repo,
                    number=int(pull["number"]),
                    head_sha=head_sha,
                    base_sha=str(pull["base"]["sha"]),
                    reason=reason,
                    coalesce=True,
                )
        return "no open pull request has that head"
    except Exception as exc:
        if _retryable(self, exc):
            raise self.retry(exc=exc, countdown=_backoff(self, exc)) from exc
        raise
