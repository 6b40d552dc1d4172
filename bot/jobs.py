"""What the worker's tasks do, apart from Celery: analyse a PR head, then publish the result.

The analysis runs `runners.pipeline.analyze` (the function every front end shares) on a private
workspace holding the PR's base and head. With the repository's config asking for the dynamic
pass, the `static` queue runs the static pass, shows its count on the check run and hands the
dynamic pass to the `dynamic` queue; the result is published by a separate task, so that a
GitHub failure while publishing is retried without analysing again.
"""

from __future__ import annotations

import time
from dataclasses import replace

from analyzers.catalogue import KNOWN_OPS
from analyzers.config import ConfigError
from analyzers.diffscope import DiffError
from analyzers.policy import app_config
from analyzers.report import result_from_json
from bot.analyses import (
    cancel_check_run,
    load_analysis,
    open_check_run,
    save_findings,
    set_comment_ids,
    still_wanted,
    update_analysis,
)
from bot.github import GitHubClient
from bot.locks import installation_lock
from bot.models import Analysis
from bot.publish import (
    commentable_lines,
    decode_lines,
    encode_lines,
    finish_check_run,
    progress,
    publish,
)
from bot.report.excerpts import collect as collect_excerpts
from bot.settings import Settings
from bot.worker import celery_app
from bot.workspace import WorkspaceError, pull_workspace
from runners.docker import runner_from_env
from runners.pipeline import analyze

MAX_FILES = 3000  # GitHub lists at most 3000 files of a PR


def run_analysis(settings: Settings, row: Analysis, stage: str, client: GitHubClient) -> str:
    started = time.perf_counter()
    pull = client.pull(row.repo, row.pr_number)
    if pull.state != "open":
        update_analysis(row.id, status="cancelled")
        cancel_check_run(row, "The pull request was closed")
        return "closed"
    head = row.head_sha
    if pull.head.sha != head:
        update_analysis(row.id, status="superseded")
        cancel_check_run(row, f"Superseded by {pull.head.sha[:12]}")
        return "superseded"
    base = pull.base.sha
    text = (
        "Fetching the pull request."
        if stage == "static"
        else "Confirming the findings by running the code."
    )
    with installation_lock(settings, row.installation_id):
        check_id = open_check_run(client, row, settings.check_name, text)
    if not update_analysis(row.id, status="running", check_run_id=check_id, base_sha=base):
        cancel_check_run(row, "Superseded by a newer push or cancelled")
        return "superseded"  # stopped while its check run was being opened
    row = load_analysis(row.id) or row
    files = client.pull_files(pull, cap=MAX_FILES)
    timings = dict(row.timings or {})
    timings["fetch_metadata"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    try:
        with pull_workspace(
            pull.base.repo.clone_url,
            base,
            head,
            client.git_auth_env(),
            settings.workspace_root,
            number=row.pr_number,
        ) as workspace:
            timings["fetch_git"] = round(time.perf_counter() - started, 3)
            try:
                # policy from the base, entries, script and keras from the head, limits capped
                config = app_config(workspace, base, head, settings.limit_caps, KNOWN_OPS)
            except ConfigError as exc:
                finish_check_run(
                    client,
                    row.repo,
                    check_id,
                    conclusion="failure",
                    title="numcheck configuration error",
                    summary="The repository's numcheck settings are invalid "
                    "(settings that decide how a pull request is judged "
                    "are read from its base, entries, script and keras from "
                    f"its head `{head[:12]}`):\n\n{exc}",
                )
                update_analysis(
                    row.id,
                    status="failed",
                    error=str(exc),
                    timings=timings,
                    publish_state={**row.publish_state, "check_completed": True},
                )
                return "configuration error"
            if stage == "static" and config.dynamic:
                result = analyze(workspace, base, head, replace(config, dynamic=False))
                if result.findings:
                    if not still_wanted(row):
                        return "superseded"
                    progress(
                        client,
                        row.repo,
                        check_id,
                        f"Static pass: {len(result.findings)} potential finding(s). "
                        "Confirming them by running the code.",
                    )
                    task_id = f"numcheck-analysis-{row.id}-dynamic"
                    timings["static_stage"] = round(time.perf_counter() - started, 3)
                    update_analysis(row.id, task_id=task_id, timings=timings)
                    celery_app.send_task(
                        "numcheck.analyze",
                        args=[row.id, "dynamic"],
                        queue="dynamic",
                        task_id=task_id,
                    )
                    return "static pass done; dynamic pass queued"
            else:
                dynamic = stage == "dynamic"
                result = analyze(
                    workspace,
                    base,
                    head,
                    config if dynamic else replace(config, dynamic=False),
                    runner=runner_from_env() if dynamic else None,
                )
            # the lines around each finding, for the report page (the checkout goes next)
            excerpts = collect_excerpts(workspace, result.findings)
    except (WorkspaceError, DiffError) as exc:
        raise RuntimeError(f"could not prepare {row.repo}#{row.pr_number}: {exc}") from exc
    if not still_wanted(row):  # a newer push or a close arrived while this one ran
        cancel_check_run(row, "Superseded by a newer push or cancelled")
        return "superseded"
    result.repo = row.repo
    timings.update({f"analysis_{k}": v for k, v in result.timings.items()})
    timings["analysis"] = round(time.perf_counter() - started, 3)
    data = result.to_json()
    save_findings(row.id, data["findings"])
    if not update_analysis(
        row.id,
        status="analysed",
        result=data,
        timings=timings,
        publish_state={
            **row.publish_state,
            "lines": encode_lines(commentable_lines(files)),
            "files": len(files),
            "excerpts": excerpts,
        },
    ):
        cancel_check_run(row, "Superseded by a newer push or cancelled")
        return "superseded"  # stopped since `still_wanted` looked
    celery_app.send_task(
        "numcheck.publish", args=[row.id], queue="static", task_id=f"numcheck-publish-{row.id}"
    )
    return f"analysed: {len(result.findings)} finding(s)"


def publish_analysis(settings: Settings, row: Analysis, client: GitHubClient) -> str:
    if row.result is None or row.check_run_id is None:
        return "nothing analysed yet"
    result = result_from_json(row.result)
    state = dict(row.publish_state or {})
    lines = decode_lines(state.get("lines") or {})

    def save(new_state: dict[str, object]) -> None:
        update_analysis(row.id, publish_state=dict(new_state))

    with installation_lock(settings, row.installation_id):
        if not still_wanted(row):
            cancel_check_run(row, "Superseded by a newer push or cancelled")
            return "superseded"
        out = publish(
            client,
            repo=row.repo,
            number=row.pr_number,
            result=result,
            check_run_id=row.check_run_id,
            lines=lines,
            state=state,
            save=save,
            max_inline=settings.max_inline_comments,
            bot_login=client.bot_login,
            details_url=settings.report_url(row.id, row.created_at),
        )
    set_comment_ids(row.id, out.comment_ids)
    update_analysis(row.id, status="published", review_id=out.review_id)
    return (
        f"published: {out.new_comments} new, {out.edited_comments} edited, {out.resolved} resolved"
    )
