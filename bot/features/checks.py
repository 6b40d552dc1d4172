"""`check_run` / `check_suite` `rerequested`: the "Re-run" buttons on the Checks tab."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.db import after_commit, session_scope
from bot.features.context import Context
from bot.models import Analysis
from bot.scheduling import schedule_analysis
from bot.webhooks import Event, Router
from bot.worker import celery_app

router = Router("checks")


def _rerun(event: Event, context: Context, head: str, pulls: list[dict[str, Any]]) -> str:
    repo, installation = event.repo_full_name, event.installation_id
    if not repo or installation is None or not head:
        return "ignored: no repository, installation or head SHA"
    reason = f"{event.name}.rerequested"
    numbers = [
        (int(p["number"]), str((p.get("base") or {}).get("sha") or ""))
        for p in pulls
        if isinstance(p.get("number"), int)
    ]
    if not numbers:  # fork PRs carry an empty list: look the head up
        with session_scope(context.settings.database_url) as s:
            known = s.scalars(
                select(Analysis)
                .where(Analysis.repo == repo, Analysis.head_sha == head)
                .order_by(Analysis.id.desc())
                .limit(1)
            ).first()
            if known is not None:
                numbers = [(known.pr_number, known.base_sha)]
    if not numbers:
        after_commit(
            lambda: celery_app.send_task(
                "numcheck.find_pull", args=[installation, repo, head, reason], queue="static"
            )
        )
        return "queued a search for the pull request"
    return "; ".join(
        schedule_analysis(
            context.settings,
            installation_id=installation,
            repo=repo,
            number=n,
            head_sha=head,
            base_sha=b,
            reason=reason,
            delivery=event.delivery,
            coalesce=True,
        )
        for n, b in numbers
    )


@router.register("check_run", "rerequested")
def check_run(event: Event, context: Context) -> str:
    run = event.payload.get("check_run") or {}
    return _rerun(
        event, context, str(run.get("head_sha") or ""), list(run.get("pull_requests") or [])
    )


@router.register("check_suite", "rerequested")
def check_suite(event: Event, context: Context) -> str:
    suite = event.payload.get("check_suite") or {}
    return _rerun(
        event, context, str(suite.get("head_sha") or ""), list(suite.get("pull_requests") or [])
    )
