"""End to end, with real parts: GitHub's own webhook payloads, signed and POSTed over HTTP to
the Flask app; real Redis; a real Celery worker process; a real git repository fetched over
git's smart HTTP; the review, comments and check run arriving at the GitHub test server.

Runs once on SQLite and once on PostgreSQL (the fault tests on SQLite only)."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from app_support import (
    APP_ID,
    WebServer,
    Worker,
    app_env,
    clean_redis,
    comment_payload,
    deliver,
    ensure_redis,
    make_key,
    postgres_database,
    pull_payload,
    wait_for,
)
from conftest import GitRepo
from github_fake import FakeGitHub, FakePull
from sqlalchemy import func, select

from bot.db import session_scope
from bot.models import Analysis, Delivery, FindingRow, Installation
from bot.settings import Settings, from_env
from bot.web import create_app

INSTALLATION = 4242
# One Redis key prefix for the whole run: the test process's Celery producer is configured
# once, and the prefix keeps these queues apart from any other user of the same Redis.
BROKER_PREFIX = f"numcheck-test-{secrets.token_hex(4)}:"
BASE_FILES = {
    # static only, commenting on every finding: these tests are about how comments are posted
    ".numcheck.toml": 'dynamic = false\ncomment_on = "potential"\n',
    "model/loss.py": "import torch\n\n\ndef loss(p):\n    return p.sum()\n",
}
HEAD = (
    "import torch\n\n\ndef loss(p, q):\n    a = torch.log(p)\n    b = p / q.norm()\n"
    "    return a.sum() + b.sum()\n"
)
HEAD_FIXED = (
    "import torch\n\n\ndef loss(p, q):\n    a = torch.log(p.clamp_min(1e-6))\n"
    "    b = p / q.norm()\n    return a.sum() + b.sum()\n"
)


@dataclass
class Stack:
    backend: str
    settings: Settings
    fake: FakeGitHub
    web: WebServer
    worker: Worker
    tmp: Path

    def repo(
        self,
        name: str,
        number: int,
        base: dict[str, str | bytes | None] | None = None,
        head: dict[str, str | bytes | None] | None = None,
    ) -> tuple[GitRepo, str]:
        repo = GitRepo(self.tmp / name.replace("/", "_") / secrets.token_hex(3))
        repo.commit(base or BASE_FILES, "base")
        repo.checkout("feature", create=True)
        repo.commit(head or {"model/loss.py": HEAD}, "add a loss")
        self.fake.add_repo(name, repo.root)
        self.fake.add_pull(FakePull(name, number, "main", "feature"))
        return repo, name

    def push_event(
        self, repo: GitRepo, name: str, number: int, action: str = "synchronize", **kw: Any
    ) -> tuple[int, dict[str, Any]]:
        payload = pull_payload(
            action,
            repo=name,
            number=number,
            head=repo.sha("feature"),
            base=repo.sha("main"),
            installation=INSTALLATION,
            api_url=self.fake.api_url,
        )
        return deliver(self.web.url, "pull_request", payload, **kw)

    def completed_run(self, name: str, head: str) -> dict[str, Any] | None:
        with self.fake.lock:
            return next(
                (
                    r
                    for r in self.fake.state.check_runs
                    if r["repo"] == name and r["head_sha"] == head and r["status"] == "completed"
                ),
                None,
            )

    def wait_published(self, name: str, head: str, timeout: float = 60) -> dict[str, Any]:
        run = wait_for(
            lambda: self.completed_run(name, head),
            timeout,
            f"a completed check run on {head[:8]}",
            self.worker.log,
        )

        def published() -> bool:
            with session_scope(self.settings.database_url) as s:
                return (
                    s.scalar(
                        select(func.count())
                        .select_from(Analysis)
                        .where(
                            Analysis.repo == name,
                            Analysis.head_sha == head,
                            Analysis.status == "published",
                        )
                    )
                    > 0
                )

        wait_for(published, timeout, "the analysis to be marked published", self.worker.log)
        return run  # type: ignore[no-any-return]

    def comments(self, name: str, top_level: bool = True) -> list[dict[str, Any]]:
        with self.fake.lock:
            return [
                c
                for c in self.fake.state.review_comments
                if c["repo"] == name and (not top_level or "in_reply_to_id" not in c)
            ]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp(f"app-{request.param}")
    key_path, public = make_key(tmp)
    broker = ensure_redis()
    # a slug of its own: the App must learn its bot login from GET /app, not assume one
    with FakeGitHub(APP_ID, public, per_page_default=30, app_slug="numcheck-ci") as fake:
        if request.param == "postgresql":
            context: Any = postgres_database()
        else:
            from contextlib import nullcontext

            context = nullcontext(f"sqlite:///{tmp / 'numcheck.db'}")
        with context as database_url:
            env = app_env(
                key_path=key_path,
                api_url=fake.api_url,
                database_url=database_url,
                broker_url=broker,
                prefix=BROKER_PREFIX,
                NUMCHECK_WORKSPACE_ROOT=str(tmp / "workspaces"),
                NUMCHECK_PUBLIC_URL="https://numcheck.example.com",
                NUMCHECK_REPORT_SECRET="report-secret",
            )
            settings = from_env(env)
            app = create_app(settings)
            worker = Worker(env, tmp / "worker.log").start()
            try:
                with WebServer(app) as web:
                    yield Stack(request.param, settings, fake, web, worker, tmp)
            finally:
                worker.stop()
                from bot.db import engine_for

                engine_for(database_url).dispose()
                clean_redis(broker, BROKER_PREFIX)


def test_push_review_then_fix_updates_instead_of_duplicating(stack: Stack) -> None:
    repo, name = stack.repo("octo/e2e", 7)
    head = repo.sha("feature")
    status, body = stack.push_event(repo, name, 7)
    assert status == 202 and "queued analysis" in body["status"], body

    run = stack.wait_published(name, head)
    assert run["conclusion"] == "neutral"
    assert run["output"]["annotations_count"] == 2
    assert run["output"]["title"].startswith("2 potential NaN/Inf risks")
    reviews = [r for r in stack.fake.state.reviews if r["repo"] == name]
    assert len(reviews) == 1 and reviews[0]["commit_id"] == head
    assert "<!-- numcheck:review -->" in reviews[0]["body"]
    review_post = stack.fake.calls("POST", rf"/repos/{name}/pulls/7/reviews$")[-1].body
    assert review_post["event"] == "COMMENT"
    comments = stack.comments(name)
    assert sorted((c["path"], c["line"], c["side"]) for c in comments) == [
        ("model/loss.py", 5, "RIGHT"),
        ("model/loss.py", 6, "RIGHT"),
    ]
    assert all("<!-- numcheck:fingerprint=" in c["body"] for c in comments)
    assert "log" in next(c for c in comments if c["line"] == 5)["body"]
    # the worker minted its own token with a well-formed App JWT
    claims = stack.fake.state.jwt_claims[-1]
    assert claims["iss"] == str(APP_ID) and claims["exp"] - claims["iat"] <= 660
    # a redelivery of an event is acknowledged and not run again
    with session_scope(stack.settings.database_url) as s:
        analyses = s.scalar(select(func.count()).select_from(Analysis).where(Analysis.repo == name))
        rows = s.scalars(select(FindingRow).join(Analysis).where(Analysis.repo == name)).all()
        assert {r.comment_id for r in rows} == {c["id"] for c in comments}

    # second push: the log is fixed, the division is not
    repo.commit({"model/loss.py": HEAD_FIXED}, "clamp the log")
    head2 = repo.sha("feature")
    delivery = secrets.token_hex(16)
    status, body = stack.push_event(repo, name, 7, delivery=delivery)
    assert status == 202, body
    status, body = stack.push_event(repo, name, 7, delivery=delivery)  # GitHub redelivers
    assert status == 200 and body["status"] == "duplicate delivery"
    run2 = stack.wait_published(name, head2)
    assert run2["conclusion"] == "neutral" and run2["output"]["annotations_count"] == 1
    assert len(stack.comments(name)) == 2  # nothing duplicated, nothing deleted
    replies = [c for c in stack.comments(name, top_level=False) if "in_reply_to_id" in c]
    fixed = next(c for c in comments if c["line"] == 5)
    assert len(replies) == 1 and replies[0]["in_reply_to_id"] == fixed["id"]
    assert f"Resolved in {head2[:12]}" in replies[0]["body"]
    assert len([r for r in stack.fake.state.reviews if r["repo"] == name]) == 1
    with session_scope(stack.settings.database_url) as s:
        assert (
            s.scalar(select(func.count()).select_from(Analysis).where(Analysis.repo == name))
            == analyses + 1
        )


def test_rerun_command_checks_write_access(stack: Stack) -> None:
    repo, name = stack.repo("octo/commands", 9)
    head = repo.sha("feature")
    stack.fake.set_permission(name, "maintainer", "write")
    stack.fake.set_permission(name, "visitor", "read")

    refused = comment_payload(
        "/numcheck rerun",
        repo=name,
        number=9,
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
        login="visitor",
        association="CONTRIBUTOR",
    )
    status, body = deliver(stack.web.url, "issue_comment", refused)
    assert status == 202 and body["status"] == "queued command rerun", body
    wait_for(
        lambda: [c for c in stack.fake.state.issue_comments if c["repo"] == name],
        30,
        "a polite refusal",
        stack.worker.log,
    )
    reply = [c for c in stack.fake.state.issue_comments if c["repo"] == name]
    assert len(reply) == 1 and "Sorry @visitor" in reply[0]["body"]
    assert not stack.fake.state.check_runs or all(
        r["repo"] != name for r in stack.fake.state.check_runs
    )

    accepted = comment_payload(
        "/numcheck rerun",
        repo=name,
        number=9,
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
        login="maintainer",
        association="MEMBER",
    )
    status, _ = deliver(stack.web.url, "issue_comment", accepted)
    assert status == 202
    again = comment_payload(
        "/numcheck rerun",
        repo=name,
        number=9,
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
        login="maintainer",
        association="MEMBER",
    )
    assert deliver(stack.web.url, "issue_comment", again)[0] == 202  # coalesced with the first
    run = stack.wait_published(name, head)
    assert run["conclusion"] == "neutral"
    reactions = {
        r["content"]
        for r in stack.fake.state.reactions
        if r["comment_id"] == accepted["comment"]["id"]
    }
    assert reactions == {"eyes", "+1"}
    assert stack.fake.calls("GET", rf"/repos/{name}/collaborators/maintainer/permission$")
    wait_for(
        lambda: (
            {"eyes", "+1"}
            <= {
                r["content"]
                for r in stack.fake.state.reactions
                if r["comment_id"] == again["comment"]["id"]
            }
        ),
        30,
        "the second command to be acknowledged",
        stack.worker.log,
    )
    with session_scope(stack.settings.database_url) as s:
        assert (
            s.scalar(select(func.count()).select_from(Analysis).where(Analysis.repo == name)) == 1
        )

    helped = comment_payload(
        "/numcheck help", repo=name, number=9, installation=INSTALLATION, api_url=stack.fake.api_url
    )
    deliver(stack.web.url, "issue_comment", helped)
    wait_for(
        lambda: len([c for c in stack.fake.state.issue_comments if c["repo"] == name]) == 2,
        30,
        "the help reply",
        stack.worker.log,
    )
    assert "/numcheck rerun" in stack.fake.state.issue_comments[-1]["body"]


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_forged_unsigned_and_malformed_deliveries_touch_nothing(stack: Stack) -> None:
    repo, name = stack.repo("octo/forged", 11)
    payload = pull_payload(
        "synchronize",
        repo=name,
        number=11,
        head=repo.sha("feature"),
        base=repo.sha("main"),
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
    )
    assert deliver(stack.web.url, "pull_request", payload, sign=False)[0] == 401
    assert deliver(stack.web.url, "pull_request", payload, secret="guess")[0] == 401
    assert (
        deliver(stack.web.url, "pull_request", payload, signature_header="sha256=" + "0" * 64)[0]
        == 401
    )
    assert deliver(stack.web.url, "pull_request", b"{not json")[0] == 400
    assert deliver(stack.web.url, "pull_request", b"[1, 2]")[0] == 400
    with session_scope(stack.settings.database_url) as s:
        assert (
            s.scalar(select(func.count()).select_from(Analysis).where(Analysis.repo == name)) == 0
        )
    # drafts and bots are acknowledged and skipped
    draft = pull_payload(
        "opened",
        repo=name,
        number=11,
        head=repo.sha("feature"),
        base=repo.sha("main"),
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
        draft=True,
    )
    assert (
        deliver(stack.web.url, "pull_request", draft)[1]["status"] == "ignored: draft pull request"
    )
    bot = dict(payload, sender={"login": "dependabot[bot]", "type": "Bot"})
    assert deliver(stack.web.url, "pull_request", bot)[1]["status"] == "ignored: sent by a bot"
    with session_scope(stack.settings.database_url) as s:
        assert (
            s.scalar(select(func.count()).select_from(Analysis).where(Analysis.repo == name)) == 0
        )


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_github_errors_are_retried_and_nothing_is_doubled(stack: Stack) -> None:
    repo, name = stack.repo("octo/faults", 13)
    head = repo.sha("feature")
    stack.fake.fail("POST", rf"/repos/{name}/pulls/13/reviews$", 500)
    stack.fake.fail("POST", rf"/repos/{name}/pulls/13/reviews$", 403, retry_after=1)
    stack.fake.fail("PATCH", rf"/repos/{name}/check-runs/\d+$", 403, retry_after=1)
    stack.fake.fail("POST", rf"/repos/{name}/check-runs$", 500)
    status, _ = stack.push_event(repo, name, 13, action="opened")
    assert status == 202
    run = stack.wait_published(name, head, timeout=90)
    assert run["conclusion"] == "neutral"
    assert len([r for r in stack.fake.state.check_runs if r["repo"] == name]) == 1
    assert len([r for r in stack.fake.state.reviews if r["repo"] == name]) == 1
    assert len(stack.comments(name)) == 2
    assert run["output"]["annotations_count"] == 2
    posts = stack.fake.calls("POST", rf"/repos/{name}/pulls/13/reviews$")
    assert [r.status for r in posts] == [500, 403, 200]  # retried by the task, not doubled
    assert "retrying" in stack.worker.log()


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_installation_events_ping_and_healthz(stack: Stack) -> None:
    import json
    import urllib.request

    from app_support import load_payload

    assert (
        deliver(stack.web.url, "ping", load_payload("ping/with-app_id.payload.json"))[1]["status"]
        == "pong"
    )
    created = load_payload("installation/created.payload.json")
    assert deliver(stack.web.url, "installation", created)[0] == 202
    added = load_payload("installation_repositories/added.payload.json")
    assert deliver(stack.web.url, "installation_repositories", added)[0] == 202
    with session_scope(stack.settings.database_url) as s:
        inst = s.get(Installation, created["installation"]["id"])
        assert inst is not None and inst.status == "active"
        names = {r.full_name for r in inst.repositories}
        assert "Codertocat/Hello-World" in names
        assert s.scalar(select(func.count()).select_from(Delivery)) >= 3
    with urllib.request.urlopen(f"{stack.web.url}/healthz", timeout=10) as response:
        health = json.loads(response.read())
    assert health == {"status": "ok", "database": "ok", "broker": "ok"}


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_a_newer_push_supersedes_and_close_cancels(stack: Stack) -> None:
    repo, name = stack.repo("octo/supersede", 15)
    head1 = repo.sha("feature")
    stack.fake.fail("GET", rf"/repos/{name}/pulls/15/files$", 0, delay=2.0)
    assert stack.push_event(repo, name, 15, action="opened")[0] == 202
    wait_for(
        lambda: stack.fake.calls("GET", rf"/repos/{name}/pulls/15/files$"),
        30,
        "the first analysis to start",
        stack.worker.log,
    )
    repo.commit({"model/loss.py": HEAD_FIXED}, "clamp the log")
    head2 = repo.sha("feature")
    assert stack.push_event(repo, name, 15)[0] == 202
    run2 = stack.wait_published(name, head2)
    assert run2["output"]["annotations_count"] == 1
    run1 = wait_for(lambda: stack.completed_run(name, head1), 30, "the old check run to end")
    assert run1["conclusion"] == "cancelled"
    reviews = [r for r in stack.fake.state.reviews if r["repo"] == name]
    assert [r["commit_id"] for r in reviews] == [head2]
    assert len(stack.comments(name)) == 1

    # closing the PR while a re-run waits cancels it
    stack.fake.fail("GET", rf"/repos/{name}/pulls/15$", 0, delay=2.0)
    rerun = comment_payload(
        "/numcheck rerun",
        repo=name,
        number=15,
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
    )
    stack.fake.set_permission(name, "Codertocat", "admin")
    deliver(stack.web.url, "issue_comment", rerun)

    def queued() -> bool:
        with session_scope(stack.settings.database_url) as s:
            return (
                s.scalar(
                    select(func.count())
                    .select_from(Analysis)
                    .where(Analysis.repo == name, Analysis.reason == "command.rerun")
                )
                == 1
            )

    wait_for(queued, 30, "the re-run to be queued", stack.worker.log)
    status, body = stack.push_event(repo, name, 15, action="closed")
    assert status == 202 and body["status"].startswith("cancelled"), body

    def settled() -> bool:
        with session_scope(stack.settings.database_url) as s:
            row = s.scalars(
                select(Analysis).where(Analysis.repo == name, Analysis.reason == "command.rerun")
            ).one()
            return row.status == "cancelled"

    wait_for(settled, 30, "the re-run to be cancelled", stack.worker.log)
    assert len([r for r in stack.fake.state.reviews if r["repo"] == name]) == 1


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_rerequested_checks_find_their_pull_request(stack: Stack) -> None:
    from app_support import load_payload, retarget

    repo, name = stack.repo("octo/rerequest", 17)
    head = repo.sha("feature")
    # check_suite rerequested for a head never seen (a fork PR: empty pull_requests)
    suite = load_payload("check_suite/rerequested.payload.json")
    retarget(suite, name, stack.fake.api_url)
    suite["installation"]["id"] = INSTALLATION
    suite["check_suite"]["head_sha"], suite["check_suite"]["pull_requests"] = head, []
    assert (
        deliver(stack.web.url, "check_suite", suite)[1]["status"]
        == "queued a search for the pull request"
    )
    stack.wait_published(name, head)
    with stack.fake.lock:
        (first,) = [dict(r) for r in stack.fake.state.check_runs if r["repo"] == name]
    # check_run rerequested on the same head: found in the database; a new check run starts
    # and finishes, the old one stays as it ended
    run = load_payload("check_run/rerequested.payload.json")
    retarget(run, name, stack.fake.api_url)
    run["installation"]["id"] = INSTALLATION
    run["check_run"]["head_sha"], run["check_run"]["pull_requests"] = head, []
    status, body = deliver(stack.web.url, "check_run", run)
    assert status == 202 and body["status"].startswith("queued analysis"), body

    def two_published() -> bool:
        with session_scope(stack.settings.database_url) as s:
            return (
                s.scalar(
                    select(func.count())
                    .select_from(Analysis)
                    .where(Analysis.repo == name, Analysis.status == "published")
                )
                == 2
            )

    wait_for(two_published, 60, "the re-run to be published", stack.worker.log)
    with stack.fake.lock:
        runs = [dict(r) for r in stack.fake.state.check_runs if r["repo"] == name]
    assert len(runs) == 2 and runs[0] == first, runs
    assert runs[1]["id"] != first["id"] and runs[1]["head_sha"] == head
    assert runs[1]["status"] == "completed" and runs[1]["conclusion"] == first["conclusion"]
    assert len([r for r in stack.fake.state.reviews if r["repo"] == name]) == 1
    assert len(stack.comments(name)) == 2  # the re-run's review edits, never duplicates

    # `/numcheck rerun`: a third check run, the first two untouched
    stack.fake.set_permission(name, "Codertocat", "admin")
    command = comment_payload(
        "/numcheck rerun",
        repo=name,
        number=17,
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
    )
    assert deliver(stack.web.url, "issue_comment", command)[0] == 202

    def three_completed() -> list[dict[str, Any]]:
        with stack.fake.lock:
            done = [dict(r) for r in stack.fake.state.check_runs if r["repo"] == name]
        return done if len(done) == 3 and done[2]["status"] == "completed" else []

    again = wait_for(three_completed, 60, "the command's check run", stack.worker.log)
    assert again[:2] == runs and again[2]["head_sha"] == head
    assert again[2]["conclusion"] == first["conclusion"]
    assert len([r for r in stack.fake.state.reviews if r["repo"] == name]) == 1
    assert len(stack.comments(name)) == 2


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_a_worker_killed_mid_task_redelivers_and_publishes_once(stack: Stack) -> None:
    import os
    import signal

    repo, name = stack.repo("octo/killed", 19)
    head = repo.sha("feature")
    stack.fake.fail("GET", rf"/repos/{name}/pulls/19/files$", 0, delay=3.0)
    assert stack.push_event(repo, name, 19, action="opened")[0] == 202
    wait_for(
        lambda: stack.fake.calls("GET", rf"/repos/{name}/pulls/19/files$"),
        30,
        "the analysis to start",
        stack.worker.log,
    )
    assert stack.worker.proc is not None
    children = _children(stack.worker.proc.pid)
    assert children, "the prefork worker has no pool process"
    for pid in children:
        os.kill(pid, signal.SIGKILL)  # the process running the task dies mid-task
    run = stack.wait_published(name, head, timeout=60)
    assert run["conclusion"] == "neutral"
    assert len(stack.fake.calls("GET", rf"/repos/{name}/pulls/19/files$")) >= 2
    assert len([r for r in stack.fake.state.check_runs if r["repo"] == name]) == 1
    assert len([r for r in stack.fake.state.reviews if r["repo"] == name]) == 1
    assert len(stack.comments(name)) == 2


DYNAMIC_CONFIG = """dynamic = true
harvest = false
search_seconds = 2.0

[[entries]]
target = "model.loss:loss"
inputs = ["float32[4] in [-1, 1]", "float32[4] in [-1, 1]"]
"""
# The PR's code checks where it runs: no App setting in its environment, no git metadata
# (where the token could hide) beside it. A leak turns the finding into an import error.
SANDBOX_CHECK = """import os
from pathlib import Path

assert not [k for k in os.environ if k.startswith("NUMCHECK_")], "App settings leaked"
assert not (Path(__file__).resolve().parent.parent / ".git").exists(), "git metadata leaked"
"""


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_the_dynamic_pass_runs_on_its_own_queue_and_confirms(stack: Stack) -> None:
    base = {
        ".numcheck.toml": DYNAMIC_CONFIG,
        "model/__init__.py": SANDBOX_CHECK,
        "model/loss.py": BASE_FILES["model/loss.py"],
    }
    repo, name = stack.repo("octo/dynamic", 21, base=base)
    head = repo.sha("feature")
    assert stack.push_event(repo, name, 21, action="opened")[0] == 202
    run = stack.wait_published(name, head, timeout=120)
    progress = [
        p.body["output"]["summary"]
        for p in stack.fake.calls("PATCH", rf"/repos/{name}/check-runs/{run['id']}$")
        if p.body.get("status") == "in_progress"
    ]
    assert any("Static pass: 2 potential finding(s)" in text for text in progress), progress
    assert run["output"]["title"] == "2 potential NaN/Inf risks, 2 confirmed", run["output"]
    comments = stack.comments(name)
    assert len(comments) == 2
    assert all("confirmed: a concrete input produced NaN/Inf" in c["body"] for c in comments)
    assert all("<summary>Reproducer</summary>" in c["body"] for c in comments)
    with session_scope(stack.settings.database_url) as s:
        row = s.scalars(select(Analysis).where(Analysis.repo == name)).one()
        assert row.task_id.endswith("-dynamic") and row.status == "published"
        assert {f.status for f in row.findings} == {"confirmed"}
    # the check run links to a signed, expiring report page with the reproducers and the
    # search plots, and each comment to its finding's section there
    import urllib.error
    import urllib.request

    link = run["details_url"]
    assert link.startswith(f"https://numcheck.example.com/report/{row.id}?exp=")
    assert "&sig=" in link
    assert all(f"{link}#finding-" in c["body"] for c in comments)
    local = stack.web.url + link[len("https://numcheck.example.com") :]
    with urllib.request.urlopen(local, timeout=10) as response:
        page = response.read().decode()
    assert "confirmed" in page and page.count('class="download reproducer-link"') == 2
    assert page.count('class="plot plot-search"') == 2 and 'class="boundary"' in page
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(local[:-4] + "0000", timeout=10)
    assert info.value.code == 403


POLICY_BASE = """check_failure = "confirmed"
dynamic = true
harvest = false
search_seconds = 2.0
dynamic_timeout = 100000
"""
# The PR adds an unguarded log and rewrites every setting that would let it pass; its entry
# (how to call its new code) is the one part of its config the App takes.
POLICY_HEAD = """check_failure = "never"
dynamic = false
disable = ["log"]
include = ["docs/**"]

[[entries]]
target = "model.loss:loss"
inputs = ["float32[4] in [-1, 1]"]
"""


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_a_pull_request_cannot_rewrite_the_policy_it_is_judged_by(stack: Stack) -> None:
    """Regression: `check_failure = "never"` in the PR's head turned its confirmed finding's
    failing check neutral. Policy comes from the base; the head's entry is used; the review
    and the check run say what was ignored and which limit was lowered."""
    base = {".numcheck.toml": POLICY_BASE, "model/loss.py": BASE_FILES["model/loss.py"]}
    head_files = {
        ".numcheck.toml": POLICY_HEAD,
        "model/loss.py": "import torch\n\n\ndef loss(p):\n    return torch.log(p).sum()\n",
    }
    repo, name = stack.repo("octo/policy", 31, base=base, head=head_files)
    head = repo.sha("feature")
    assert stack.push_event(repo, name, 31, action="opened")[0] == 202
    run = stack.wait_published(name, head, timeout=120)
    assert run["conclusion"] == "failure", run["output"]
    assert run["output"]["title"] == "1 potential NaN/Inf risk, 1 confirmed", run["output"]
    review = next(r for r in stack.fake.state.reviews if r["repo"] == name)
    for text in (run["output"]["summary"], review["body"]):
        assert "**Settings.**" in text
        for ignored in (
            '`check_failure` = `"never"` (base: `"confirmed"`)',
            "`dynamic` = `false` (base: `true`)",
            '`disable` = `["log"]`',
            '`include` = `["docs/**"]`',
        ):
            assert ignored in text, (ignored, text)
        assert "`dynamic_timeout` = `100000` is above this App's limit; `600` was used." in text
    (comment,) = stack.comments(name)
    assert "confirmed" in comment["body"] and comment["line"] == 5
    with session_scope(stack.settings.database_url) as s:
        row = s.scalars(select(Analysis).where(Analysis.repo == name)).one()
        assert row.result is not None
        used = row.result["config"]
        assert used["check_failure"] == "confirmed" and used["dynamic_timeout"] == 600
        assert [e["target"] for e in used["entries"]] == ["model.loss:loss"]


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_a_review_copying_the_marker_does_not_silence_the_app(stack: Stack) -> None:
    """Regression: any review whose body held the App's marker and the head SHA was taken as
    the App's own, and the App then posted neither its review nor its inline comments. Only
    reviews by the App's bot user (`<slug>[bot]`, learnt from GET /app) are its own."""
    repo, name = stack.repo("octo/impostor", 33)
    head = repo.sha("feature")
    forged = f"looks done\n\n<!-- numcheck:review -->\n<!-- numcheck:head={head} -->"
    stack.fake.add_review(name, 33, "mallory", forged, head)
    stack.fake.add_review(name, 33, "copycat[bot]", forged, head)  # another App's bot too
    assert stack.push_event(repo, name, 33, action="opened")[0] == 202
    stack.wait_published(name, head)
    reviews = [r for r in stack.fake.state.reviews if r["repo"] == name]
    ours = [r for r in reviews if r["user"]["login"] == "numcheck-ci[bot]"]
    assert len(reviews) == 3 and len(ours) == 1 and ours[0]["commit_id"] == head
    assert len(stack.comments(name)) == 2
    assert stack.fake.calls("GET", r"^/app$")  # the identity came from the API


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_concurrent_deliveries_are_acknowledged_fast(stack: Stack) -> None:
    """Signed pull_request deliveries, one by one and 30 at once, each recorded and enqueued:
    the web answers in milliseconds (GitHub gives up after 10 s)."""
    import statistics
    import time
    from concurrent.futures import ThreadPoolExecutor

    name = "octo/burst"  # unknown to the test server: the worker's tasks end at once

    def one(number: int) -> tuple[int, float, float]:
        payload = pull_payload(
            "synchronize",
            repo=name,
            number=number,
            head="a" * 40,
            base="b" * 40,
            installation=INSTALLATION,
            api_url=stack.fake.api_url,
        )
        started = time.perf_counter()
        status, body = deliver(stack.web.url, "pull_request", payload)
        return status, float(body.get("ms", 1e9)), (time.perf_counter() - started) * 1000

    one_by_one = [one(n) for n in range(1000, 1010)]
    with ThreadPoolExecutor(max_workers=30) as pool:
        burst = list(pool.map(one, range(2000, 2030)))
    assert {status for status, _, _ in one_by_one + burst} == {202}
    alone = statistics.median(ms for _, ms, _ in one_by_one)
    crowded = sorted(ms for _, ms, _ in burst)
    print(
        f"webhook ack: alone p50 {alone:.1f} ms; 30 at once p50 "
        f"{statistics.median(crowded):.1f} ms, max {crowded[-1]:.1f} ms (one web process)"
    )
    assert alone < 100 and crowded[-1] < 5000
    with session_scope(stack.settings.database_url) as s:
        assert (
            s.scalar(select(func.count()).select_from(Analysis).where(Analysis.repo == name)) == 40
        )


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_an_oversized_pull_request_is_analysed_whole(stack: Stack) -> None:
    """GitHub lists at most 3000 files: what lies beyond is still analysed (from git) and
    reported in the review body and the annotations, just not commented inline."""
    head_files: dict[str, str | bytes | None] = {f"docs/n{i:04}.txt": f"{i}\n" for i in range(2999)}
    head_files["model/loss.py"] = HEAD
    head_files["zz/loss.py"] = HEAD
    repo, name = stack.repo("octo/huge", 23, head=head_files)
    head = repo.sha("feature")
    assert stack.push_event(repo, name, 23, action="opened")[0] == 202
    run = stack.wait_published(name, head, timeout=90)
    assert run["output"]["annotations_count"] == 4
    pages = stack.fake.calls("GET", rf"/repos/{name}/pulls/23/files$")
    assert len(pages) == 30  # 3000 files, 100 a page
    comments = stack.comments(name)
    assert {c["path"] for c in comments} == {"model/loss.py"} and len(comments) == 2
    body = next(r for r in stack.fake.state.reviews if r["repo"] == name)["body"]
    assert "Findings not commented inline" in body and "zz/loss.py" in body


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_a_fork_pull_request_is_fetched_through_its_pull_ref(stack: Stack) -> None:
    name = "octo/forked"
    upstream = GitRepo(stack.tmp / "forked-upstream")
    upstream.commit(BASE_FILES, "base")
    fork = GitRepo(stack.tmp / "forked-fork", init=False)
    subprocess.run(["git", "clone", "-q", str(upstream.root), str(fork.root)], check=True)
    fork.git("config", "user.name", "forker")
    fork.git("config", "user.email", "forker@numcheck.invalid")
    fork.checkout("feature", create=True)
    head = fork.commit({"model/loss.py": HEAD}, "from a fork")
    stack.fake.add_repo(name, upstream.root)
    stack.fake.add_pull(FakePull(name, 25, "main", "feature", fork=fork.root))
    payload = pull_payload(
        "opened",
        repo=name,
        number=25,
        head=head,
        base=upstream.sha("main"),
        installation=INSTALLATION,
        api_url=stack.fake.api_url,
    )
    assert deliver(stack.web.url, "pull_request", payload)[0] == 202
    run = stack.wait_published(name, head)
    assert run["conclusion"] == "neutral" and len(stack.comments(name)) == 2
    assert not upstream.git("branch", "--list", "feature")  # the head is only in the fork


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_a_bad_repository_config_fails_the_check_run_with_the_reason(stack: Stack) -> None:
    base = dict(BASE_FILES)
    base[".numcheck.toml"] = "dynamc = false\n"  # a typo
    repo, name = stack.repo("octo/badconfig", 27, base=base)
    head = repo.sha("feature")
    assert stack.push_event(repo, name, 27, action="opened")[0] == 202
    run = wait_for(lambda: stack.completed_run(name, head), 60, "the check run", stack.worker.log)
    assert run["conclusion"] == "failure"
    assert run["output"]["title"] == "numcheck configuration error"
    assert "dynamc" in run["output"]["summary"] and "dynamic" in run["output"]["summary"]
    assert not [r for r in stack.fake.state.reviews if r["repo"] == name]


@pytest.mark.parametrize("stack", ["sqlite"], indirect=True)
def test_a_worker_that_keeps_crashing_gets_three_deliveries_then_a_failed_check_run(
    stack: Stack,
) -> None:
    """The pool process running the analysis dies by SIGSEGV, as on a native parser crash;
    Celery puts the task back each time. The fourth delivery completes the check run with the
    reason instead of analysing again, and nothing is delivered after it."""
    import os
    import signal
    import time

    from bot.analyses import MAX_DELIVERIES

    repo, name = stack.repo("octo/crashing", 29)
    head = repo.sha("feature")
    files = rf"/repos/{name}/pulls/29/files$"
    stack.fake.fail("GET", files, 0, delay=3.0, times=MAX_DELIVERIES)
    assert stack.push_event(repo, name, 29, action="opened")[0] == 202
    assert stack.worker.proc is not None

    def started(count: int) -> Callable[[], bool]:
        return lambda: len(stack.fake.calls("GET", files)) >= count

    for delivery in range(1, MAX_DELIVERIES + 1):
        wait_for(started(delivery), 60, f"delivery {delivery} to start", stack.worker.log)
        children = _children(stack.worker.proc.pid)
        assert children, "the prefork worker has no pool process"
        for pid in children:
            os.kill(pid, signal.SIGSEGV)
    run = wait_for(
        lambda: stack.completed_run(name, head), 60, "the check run to complete", stack.worker.log
    )
    assert run["conclusion"] == "neutral", run
    assert run["output"]["title"] == "numcheck could not finish"
    assert f"died {MAX_DELIVERIES} times" in run["output"]["summary"], run["output"]
    with session_scope(stack.settings.database_url) as s:
        row = s.scalars(select(Analysis).where(Analysis.repo == name)).one()
        assert row.status == "failed" and row.deliveries == MAX_DELIVERIES + 1
    time.sleep(3)  # no fifth delivery: the fourth was acknowledged
    assert len(stack.fake.calls("GET", files)) == MAX_DELIVERIES
    assert "gave up" in stack.worker.log() or "giving up" in stack.worker.log()
    assert not [r for r in stack.fake.state.reviews if r["repo"] == name]
