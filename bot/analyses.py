"""The analysis rows a task works on, and their check runs: load and update a row (a stopped
row stays stopped), count deliveries, fail one visibly, save its findings.

No task is sent from here: the scheduling (bot/scheduling.py) and the tasks (bot/tasks.py)
both use it, and neither imports the other through it."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select, update

from bot.db import session_scope
from bot.github import GitHubClient
from bot.models import Analysis, FindingRow
from bot.publish import ensure_check_run, finish_check_run, in_progress_body
from bot.worker import client_for, get_settings

log = logging.getLogger("numcheck.worker")

MAX_DELIVERIES = 3
"""Deliveries of one analysis task that may start and never end (the worker process died:
acks_late with reject_on_worker_lost puts the message straight back). Past this, the next
delivery fails the analysis visibly and acknowledges the message, so a file that kills the
process cannot crash worker after worker. Retries of transient GitHub errors end in Python
and are counted by Celery's `retries` (settings.max_retries), not here."""


def load_analysis(analysis_id: int) -> Analysis | None:
    with session_scope(get_settings().database_url) as s:
        return s.get(Analysis, analysis_id)


# Where a row that a close or a newer push stopped stays: a worker still running it must not
# bring it back to life (it checked `still_wanted` before the close arrived).
STOPPED = ("superseded", "cancelled")


def update_analysis(analysis_id: int, **values: Any) -> bool:
    """Set the row's columns in one statement. A status change of a stopped row is refused
    (nothing is written) and False returned: the caller's work is no longer wanted.

    The refusal is the UPDATE's own condition, not a read before it: SQLite has no row
    locks (`FOR UPDATE` is ignored), so a close that cancelled the row between a read and
    the write was overwritten by the worker's "running", and the cancelled analysis went on
    to publish (tests/test_app_e2e.py caught it once in CI)."""
    statement = update(Analysis).where(Analysis.id == analysis_id)
    if "status" in values and values["status"] not in STOPPED:
        statement = statement.where(Analysis.status.not_in(STOPPED))
    with session_scope(get_settings().database_url) as s:
        done = s.execute(statement.values(**values).execution_options(synchronize_session=False))
        return bool(getattr(done, "rowcount", 0) == 1)


def still_wanted(row: Analysis) -> bool:
    """False when the row was superseded or cancelled, or a newer analysis of the PR exists."""
    with session_scope(get_settings().database_url) as s:
        current = s.get(Analysis, row.id)
        if current is None or current.status in STOPPED:
            return False
        newer = s.scalar(
            select(Analysis.id)
            .where(
                Analysis.repo == row.repo, Analysis.pr_number == row.pr_number, Analysis.id > row.id
            )
            .limit(1)
        )
        if newer is not None:
            current.status = "superseded"
            return False
    return True


def begin_delivery(analysis_id: int) -> int:
    """Count one more delivery of the analysis task that started work; the count so far."""
    with session_scope(get_settings().database_url) as s:
        s.execute(
            update(Analysis)
            .where(Analysis.id == analysis_id)
            .values(deliveries=Analysis.deliveries + 1)
        )
        return int(s.scalar(select(Analysis.deliveries).where(Analysis.id == analysis_id)) or 0)


def end_delivery(analysis_id: int) -> None:
    """The delivery ended in Python (done, failed or retried): it was no crash."""
    try:
        update_analysis(analysis_id, deliveries=0)
    except Exception as exc:  # noqa: BLE001 - the task's own outcome matters more
        log.warning("analysis %s: could not reset its delivery count: %s", analysis_id, exc)


def fail_analysis(row: Analysis, message: str, create: bool = False) -> None:
    """Mark the analysis failed and complete its check run (neutral) with the reason; with
    `create`, a check run is made when the analysis never got as far as making one."""
    update_analysis(row.id, status="failed", error=message[:5000])
    current = load_analysis(row.id)
    if current is None or (current.check_run_id is None and not create):
        return
    try:
        client = client_for(row.installation_id)
        run_id = current.check_run_id
        if run_id is None:
            run_id = open_check_run(
                client, current, get_settings().check_name, "numcheck could not finish"
            )
            update_analysis(row.id, check_run_id=run_id)
        finish_check_run(
            client,
            row.repo,
            run_id,
            conclusion="neutral",
            title="numcheck could not finish",
            summary=f"The analysis of `{row.head_sha[:12]}` stopped: {message}",
        )
        update_analysis(row.id, publish_state={**current.publish_state, "check_completed": True})
    except Exception as exc:  # noqa: BLE001 - reporting the failure must not raise
        log.warning("could not report failure of analysis %s: %s", row.id, exc)


# What a person asked to run again: GitHub's documented answer to `rerequested` is a new check
# run, and whoever typed `/numcheck rerun` expects to watch one start; the old run stays as it
# ended. A push reuses the head's run instead (one head, one run).
RERUN_REASONS = ("command.rerun", "check_run.rerequested", "check_suite.rerequested")


def open_check_run(client: GitHubClient, row: Analysis, name: str, text: str) -> int:
    """The analysis's check run, set in progress with `text`: the one it already has; for a
    re-run without one, a new run; otherwise the head's run (found by name) or a new one."""
    if row.check_run_id is None and row.reason in RERUN_REASONS:
        return int(
            client.create_check_run(row.repo, in_progress_body(row.head_sha, name, text))["id"]
        )
    return ensure_check_run(client, row.repo, row.head_sha, name, text, row.check_run_id)


def cancel_check_run(row: Analysis, why: str) -> None:
    current = load_analysis(row.id)
    if (
        current is None
        or current.check_run_id is None
        or current.publish_state.get("check_completed")
    ):
        return
    try:
        finish_check_run(
            client_for(row.installation_id),
            row.repo,
            current.check_run_id,
            conclusion="cancelled",
            title=why,
            summary=why,
        )
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
            row.findings.append(
                FindingRow(
                    fingerprint=f["fingerprint"],
                    path=f["path"],
                    line=f["line"],
                    op=f["op"],
                    status=f["status"],
                )
            )


def set_comment_ids(analysis_id: int, ids: dict[str, int]) -> None:
    with session_scope(get_settings().database_url) as s:
        for finding in s.scalars(select(FindingRow).where(FindingRow.analysis_id == analysis_id)):
            finding.comment_id = ids.get(finding.fingerprint, finding.comment_id)
