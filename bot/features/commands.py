"""`/numcheck rerun` and `/numcheck help` in a PR's conversation (GitHub sends these as
`issue_comment` events on the PR's issue).

The web handler only recognises the command and enqueues it; the worker checks permission
(author_association, confirmed by the collaborator-permission endpoint), reacts so the author
sees it was received, and re-runs or replies. Someone without write access gets at most one
answer per pull request in `NUMCHECK_COMMAND_REPLY_MINUTES` (bot/throttle.py): anyone can
comment, and every reply spends the installation's share of GitHub's rate limits.
"""

from __future__ import annotations

from typing import Any

from bot.db import after_commit
from bot.features.context import Context
from bot.github import GitHubClient
from bot.scheduling import schedule_analysis
from bot.settings import Settings
from bot.throttle import claim_reply
from bot.webhooks import Event, Router
from bot.worker import celery_app

router = Router("commands")

WRITE_ASSOCIATIONS = {"OWNER", "MEMBER", "COLLABORATOR"}
WRITE_PERMISSIONS = {"admin", "maintain", "write"}
COMMANDS = ("rerun", "help")
HELP = """numcheck looks for operations that can produce NaN or Inf in the lines this pull \
request adds, and tries to prove each one by running the code.

Commands (comment on the pull request):

* `/numcheck rerun`: analyse the current head again (needs write access to the repository).
* `/numcheck help`: this message.

Settings live in `.numcheck.toml` or `[tool.numcheck]` in `pyproject.toml`."""


def parse(body: str) -> str | None:
    """The command on the comment's first non-empty line, '' for an unknown one, None when
    the comment is not addressed to numcheck."""
    for line in body.strip().splitlines()[:1]:
        words = line.strip().split()
        if words and words[0].lower() == "/numcheck":
            word = words[1].lower() if len(words) > 1 else "help"
            return word if word in COMMANDS else ""
    return None


@router.register("issue_comment", "created")
def command(event: Event, context: Context) -> str:
    payload = event.payload
    issue, comment = payload.get("issue") or {}, payload.get("comment") or {}
    if not issue.get("pull_request"):
        return "ignored: not a pull request comment"
    name = parse(str(comment.get("body") or ""))
    if name is None:
        return "ignored: not a numcheck command"
    if event.installation_id is None or not event.repo_full_name:
        return "ignored: no installation or repository"
    job = {
        "installation": {"id": event.installation_id},
        "repository": event.repo_full_name,
        "number": int(issue["number"]),
        "comment": {
            "id": int(comment["id"]),
            "body": str(comment.get("body") or ""),
            "author_association": str(comment.get("author_association") or ""),
            "user": str((comment.get("user") or {}).get("login") or ""),
        },
        "delivery": event.delivery,
    }
    after_commit(lambda: celery_app.send_task("numcheck.command", args=[job], queue="static"))
    return f"queued command {name or 'unknown'}"


def may_rerun(client: GitHubClient, repo: str, login: str, association: str) -> bool:
    if association.upper() not in WRITE_ASSOCIATIONS or not login:
        return False
    return client.permission(repo, login) in WRITE_PERMISSIONS


def run_command(settings: Settings, job: dict[str, Any], client: GitHubClient) -> str:
    repo, number, comment = str(job["repository"]), int(job["number"]), job["comment"]
    name = parse(comment["body"])
    login = str(comment["user"])
    outsider = str(comment["author_association"]).upper() not in WRITE_ASSOCIATIONS
    if outsider and not claim_reply(settings, repo, number, login, int(comment["id"])):
        return (
            f"not answered: {login} was answered on this pull request within "
            f"{settings.command_reply_minutes:g} minutes"
        )
    client.react_to_issue_comment(repo, int(comment["id"]), "eyes")
    if name == "rerun":
        if not may_rerun(client, repo, login, comment["author_association"]):
            client.issue_comment(
                repo,
                number,
                (
                    f"Sorry @{login}, only people with write access to this repository can ask "
                    "numcheck to re-run. A maintainer can comment `/numcheck rerun` instead; "
                    "every push is analysed anyway."
                ),
            )
            return "refused"
        pull = client.pull(repo, number)
        if pull.state != "open":
            client.issue_comment(repo, number, "numcheck analyses open pull requests only.")
            return "closed"
        client.react_to_issue_comment(repo, int(comment["id"]), "+1")
        return schedule_analysis(
            settings,
            installation_id=int(job["installation"]["id"]),
            repo=repo,
            number=number,
            head_sha=pull.head.sha,
            base_sha=pull.base.sha,
            reason="command.rerun",
            delivery=str(job.get("delivery") or ""),
            coalesce=True,
        )
    prefix = "" if name == "help" else "numcheck does not know that command.\n\n"
    client.issue_comment(repo, number, prefix + HELP)
    return "help"
