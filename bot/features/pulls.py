"""`pull_request`: analyse a PR when its head changes; cancel when it closes."""

from __future__ import annotations

from bot.features.context import Context
from bot.scheduling import cancel_pull, schedule_analysis
from bot.webhooks import Event, Router

router = Router("pulls")


@router.register("pull_request", "opened", "synchronize", "reopened", "ready_for_review")
def analyse(event: Event, context: Context) -> str:
    pull = event.payload.get("pull_request") or {}
    repo, installation = event.repo_full_name, event.installation_id
    if not repo or installation is None or not isinstance(pull.get("number"), int):
        return "ignored: no repository, installation or pull request"
    if pull.get("draft") and not context.settings.analyze_drafts:
        return "ignored: draft pull request"
    if pull.get("state", "open") != "open":
        return "ignored: pull request is not open"
    head = str((pull.get("head") or {}).get("sha") or "")
    base = str((pull.get("base") or {}).get("sha") or "")
    if not head:
        return "ignored: no head SHA"
    return schedule_analysis(
        context.settings,
        installation_id=installation,
        repo=repo,
        number=int(pull["number"]),
        head_sha=head,
        base_sha=base,
        reason=f"pull_request.{event.action}",
        delivery=event.delivery,
    )


@router.register("pull_request", "edited")
def base_changed(event: Event, context: Context) -> str:
    """A PR retargeted to another base branch changes its diff: analyse again."""
    if "base" not in (event.payload.get("changes") or {}):
        return "ignored: title or body edited"
    return analyse(event, context) or ""


@router.register("pull_request", "closed")
def closed(event: Event, context: Context) -> str:
    pull = event.payload.get("pull_request") or {}
    if not event.repo_full_name or not isinstance(pull.get("number"), int):
        return "ignored: no repository or pull request"
    return cancel_pull(context.settings, event.repo_full_name, int(pull["number"]))
