"""The App's parts one at a time: settings, signatures, routing, tokens, the GitHub client
against the test server (pagination, faults), publishing idempotence, and migrations on SQLite
and PostgreSQL."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from app_support import APP_ID, SECRET, app_env, make_key, postgres_database
from conftest import GitRepo, GitRepoFactory
from github import GithubException
from github_fake import FakeGitHub, FakePull
from sqlalchemy import inspect

from analyzers.model import AnalysisResult, Finding, StageError, Status
from bot import db
from bot.github import GitHubClient, TokenCache, app_jwt, is_transient
from bot.publish import commentable_lines, publish
from bot.settings import SettingsError, from_env
from bot.webhooks import Event, Router, dispatch, signature, verify_signature

LOSS_BASE = "import torch\n\n\ndef loss(p):\n    return p.sum()\n"
LOSS_HEAD = (
    "import torch\n\n\ndef loss(p, q):\n    a = torch.log(p)\n    b = p / q.norm()\n"
    "    return a.sum() + b.sum()\n"
)


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return make_key(tmp_path_factory.mktemp("key"))


@pytest.fixture
def fake(key: tuple[Path, str]) -> Iterator[FakeGitHub]:
    with FakeGitHub(APP_ID, key[1]) as server:
        yield server


def _env(key: tuple[Path, str], api: str = "http://127.0.0.1:9", **extra: str) -> dict[str, str]:
    return app_env(
        key_path=key[0],
        api_url=api,
        database_url="sqlite:///x.db",
        broker_url="redis://127.0.0.1:6379/0",
        **extra,
    )


# --- settings ---------------------------------------------------------------------------------
def test_settings_read_from_the_environment(key: tuple[Path, str]) -> None:
    settings = from_env(_env(key, "https://ghe.example.com/api/v3/"))
    assert settings.app_id == APP_ID
    assert settings.webhook_secret == SECRET.encode()
    assert settings.github_api_url == "https://ghe.example.com/api/v3"
    assert "PRIVATE KEY" in settings.private_key
    assert SECRET not in repr(settings) and "PRIVATE KEY" not in repr(settings)
    pg = from_env(_env(key, NUMCHECK_DATABASE_URL="postgresql://u@h/db"))
    assert pg.database_url == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"NUMCHECK_APP_ID": ""}, "NUMCHECK_APP_ID is not set"),
        ({"NUMCHECK_APP_ID": "abc"}, "must be a positive integer"),
        ({"NUMCHECK_PRIVATE_KEY": "/nonexistent/key.pem"}, "no such file"),
        ({"NUMCHECK_WEBHOOK_SECRET": ""}, "NUMCHECK_WEBHOOK_SECRET is not set"),
        ({"NUMCHECK_BROKER_URL": "http://x"}, "NUMCHECK_BROKER_URL='http://x' is not a supported"),
        ({"NUMCHECK_BROKER_URL": ""}, "NUMCHECK_BROKER_URL is not set"),
        ({"NUMCHECK_DATABASE_URL": "mysql://x"}, "NUMCHECK_DATABASE_URL"),
        ({"NUMCHECK_GITHUB_API_URL": "ftp://x"}, "NUMCHECK_GITHUB_API_URL"),
        ({"NUMCHECK_TIME_LIMIT": "soon"}, "is not a number"),
        ({"NUMCHECK_PUBLIC_URL": "https://x.example"}, "NUMCHECK_REPORT_SECRET is not"),
        ({"NUMCHECK_PUBLIC_URL": "x.example", "NUMCHECK_REPORT_SECRET": "s"}, "not an http"),
        ({"NUMCHECK_ANALYZE_DRAFTS": "perhaps"}, "is not a boolean"),
    ],
)
def test_a_missing_or_wrong_setting_is_a_clear_error(
    key: tuple[Path, str], change: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        from_env({**_env(key), **change})


def test_a_private_key_that_is_not_a_key_is_refused(tmp_path: Path, key: tuple[Path, str]) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("hello")
    with pytest.raises(SettingsError, match="not a PEM private key"):
        from_env(_env(key, NUMCHECK_PRIVATE_KEY=str(bad)))


# --- signatures and routing -------------------------------------------------------------------
def test_signature_matches_githubs_test_vector() -> None:
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature(SECRET.encode(), b"Hello, World!") == expected
    assert verify_signature(SECRET.encode(), b"Hello, World!", expected)
    assert not verify_signature(SECRET.encode(), b"Hello, World?", expected)
    assert not verify_signature(SECRET.encode(), b"Hello, World!", None)
    assert not verify_signature(SECRET.encode(), b"Hello, World!", expected[7:])
    assert not verify_signature(SECRET.encode(), b"Hello, World!", "sha1=" + expected[7:])
    assert not verify_signature(b"other", b"Hello, World!", expected)
    assert not verify_signature(SECRET.encode(), b"Hello, World!", "sha256=\u00e9")


def test_routers_match_event_and_action() -> None:
    router = Router("t")
    seen: list[str] = []

    @router.register("pull_request", "opened", "synchronize")
    def _pr(event: Event, context: Any) -> str:
        seen.append(f"pr:{event.action}")
        return "pr"

    @router.register("ping")
    def _ping(event: Event, context: Any) -> str:
        seen.append("ping")
        return "pong"

    assert dispatch([router], Event("pull_request", "d1", {"action": "opened"}), None) == ["pr"]
    assert dispatch([router], Event("pull_request", "d2", {"action": "closed"}), None) == []
    assert dispatch([router], Event("ping", "d3", {}), None) == ["pong"]
    assert seen == ["pr:opened", "ping"]
    assert Event("x", "d", {"sender": {"login": "dependabot[bot]", "type": "Bot"}}).sender_is_bot


# --- tokens and the client against the test server --------------------------------------------
def test_app_jwt_claims(key: tuple[Path, str]) -> None:
    settings = from_env(_env(key))
    now = time.time()
    claims = jwt.decode(
        app_jwt(APP_ID, settings.private_key, now),
        key[1],
        algorithms=["RS256"],
        options={"verify_exp": False},
    )
    assert claims["iss"] == str(APP_ID)
    assert claims["iat"] == int(now) - 60
    assert 0 < claims["exp"] - int(now) <= 600


def test_installation_token_is_minted_once_and_cached(
    key: tuple[Path, str], fake: FakeGitHub
) -> None:
    settings = from_env(_env(key, fake.api_url))
    tokens = TokenCache(settings)
    first = tokens.token(7)
    assert first.startswith("ghs_") and tokens.token(7) == first and tokens.minted == 1
    assert fake.state.tokens[first][0] == 7
    assert len(fake.calls("POST", r"^/app/installations/7/access_tokens$")) == 1
    # a token within five minutes of expiry is replaced
    tokens._tokens[7].expires_at = time.time() + 200
    assert tokens.token(7) != first and tokens.minted == 2


def test_the_bot_login_comes_from_get_app_with_the_jwt_once(
    key: tuple[Path, str], fake: FakeGitHub
) -> None:
    fake.state.app_slug = "numerics-checker"
    settings = from_env(_env(key, fake.api_url))
    tokens = TokenCache(settings)
    client = GitHubClient(settings, tokens, 7)
    try:
        assert client.bot_login == "numerics-checker[bot]" == tokens.bot_login()
    finally:
        client.close()
    (call,) = fake.calls("GET", r"^/app$")  # asked once, then kept
    assert call.status == 200 and fake.state.jwt_claims[-1]["iss"] == str(APP_ID)


def test_a_jwt_signed_with_another_key_is_refused(
    tmp_path: Path, key: tuple[Path, str], fake: FakeGitHub
) -> None:
    other, _ = make_key(tmp_path)
    settings = from_env(_env(key, fake.api_url, NUMCHECK_PRIVATE_KEY=str(other)))
    with pytest.raises(GithubException) as info:
        TokenCache(settings).token(7)
    assert info.value.status == 401


def _repo_with_pull(
    git_repo: GitRepoFactory,
    fake: FakeGitHub,
    files: int = 0,
    name: str = "octo/numlib",
    number: int = 3,
) -> GitRepo:
    feature: dict[str, str | bytes | None] = {"model/loss.py": LOSS_HEAD}
    feature.update({f"extra/f{i:03}.py": f"x = {i}\n" for i in range(files)})
    repo = git_repo({"model/loss.py": LOSS_BASE}, feature)
    fake.add_repo(name, repo.root)
    fake.add_pull(FakePull(name, number, "main", "feature"))
    return repo


def test_pull_files_follow_link_pagination(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    _repo_with_pull(git_repo, fake, files=150)
    client = GitHubClient(
        from_env(_env(key, fake.api_url)), TokenCache(from_env(_env(key, fake.api_url))), 7
    )
    pull = client.pull("octo/numlib", 3)
    files = client.pull_files(pull)
    assert len(files) == 151
    pages = fake.calls("GET", r"/pulls/3/files$")
    assert len(pages) == 2 and pages[1].query["page"] == ["2"]
    lines = commentable_lines(files)
    assert {5, 6, 7} <= lines["model/loss.py"]


def test_transient_errors_are_retried_and_others_are_not(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    _repo_with_pull(git_repo, fake)
    settings = from_env(_env(key, fake.api_url, NUMCHECK_RETRY_BASE_SECONDS="0.1"))
    client = GitHubClient(settings, TokenCache(settings), 7)
    fake.fail("GET", r"/pulls/3$", 500, times=2)
    assert client.pull("octo/numlib", 3).number == 3  # GETs are retried inside PyGithub
    fake.fail("POST", r"/check-runs$", 403, retry_after=1)
    with pytest.raises(GithubException) as info:  # POSTs are left to the task
        client.create_check_run("octo/numlib", {"name": "n", "head_sha": "a" * 40})
    assert info.value.status == 403 and is_transient(info.value)
    fake.fail("POST", r"/check-runs$", 500)
    with pytest.raises(GithubException) as info:
        client.create_check_run("octo/numlib", {"name": "n", "head_sha": "a" * 40})
    assert is_transient(info.value)
    with pytest.raises(GithubException) as info:
        client.create_check_run("octo/numlib", {"name": "", "head_sha": "a"})
    assert info.value.status == 422 and not is_transient(info.value)
    fake.fail("GET", r"/pulls/3$", 0, delay=0.5)  # a slow answer still arrives
    started = time.monotonic()
    assert client.pull("octo/numlib", 3).number == 3
    assert time.monotonic() - started >= 0.5


@pytest.mark.parametrize("broker", ["redis", "filesystem"])
def test_a_retry_after_pauses_the_whole_installation(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory, tmp_path: Path, broker: str
) -> None:
    """One task's 403 with Retry-After holds every task of that installation, on any host:
    another PR's task that takes the publish lock next must not call at once (an early call
    can extend GitHub's penalty). Other installations are not held."""
    from bot import pauses

    _repo_with_pull(git_repo, fake)
    brokers = {
        "redis": {
            "NUMCHECK_BROKER_URL": "redis://127.0.0.1:6379/0",
            "NUMCHECK_BROKER_PREFIX": f"numcheck-pause-{tmp_path.name}:",
        },
        "filesystem": {
            "NUMCHECK_BROKER_URL": "filesystem://",
            "NUMCHECK_BROKER_FOLDER": str(tmp_path / "broker"),
        },
    }
    settings = from_env({**_env(key, fake.api_url), **brokers[broker]})
    first, second = (GitHubClient(settings, TokenCache(settings), 7) for _ in range(2))
    other = GitHubClient(settings, TokenCache(settings), 8)
    body = {"name": "n", "head_sha": "a" * 40}

    fake.fail("POST", r"/check-runs$", 403, retry_after=2)
    with pytest.raises(GithubException):
        first.create_check_run("octo/numlib", body)
    refused = time.monotonic()
    assert 1.0 < pauses.remaining(settings, 7) <= 2.0
    assert pauses.remaining(settings, 8) == 0.0
    other.create_check_run("octo/numlib", body)  # another installation calls at once
    assert time.monotonic() - refused < 1.0
    second.create_check_run("octo/numlib", body)  # a short pause is slept out, then it calls
    assert time.monotonic() - refused >= 1.9
    assert [c.status for c in fake.calls("POST", r"/check-runs$")] == [403, 201, 201]

    fake.fail("POST", r"/check-runs$", 403, retry_after=60)
    with pytest.raises(GithubException):
        first.create_check_run("octo/numlib", body)
    with pytest.raises(pauses.Paused) as info:  # a long one frees the worker: retry later
        second.create_check_run("octo/numlib", body)
    assert 55 < info.value.seconds <= 60 and is_transient(info.value)
    with pytest.raises(pauses.Paused):
        second.pull("octo/numlib", 3)  # reads wait too, as GitHub asks
    assert len(fake.calls("POST", r"/check-runs$")) == 4  # nothing went out while paused
    pauses.pause(settings, 7, 1.0)  # a shorter answer never shortens the pause
    assert pauses.remaining(settings, 7) > 55


def test_a_paused_task_comes_back_when_the_pause_ends_and_keeps_its_retries(
    key: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiting out GitHub's pause is not a failure: past the retry budget a paused task is
    still retried, at the pause's end (not an exponential backoff); a 500 past the budget
    is not."""
    from types import SimpleNamespace

    from bot import tasks, worker
    from bot.pauses import Paused

    monkeypatch.setattr(worker, "_bound", from_env(_env(key)))
    spent = SimpleNamespace(request=SimpleNamespace(retries=50))
    paused = Paused(7, 30.0)
    assert tasks._retryable(spent, paused)  # type: ignore[arg-type]
    assert 30.0 <= tasks._backoff(spent, paused) <= 31.0  # type: ignore[arg-type]
    server_error = GithubException(500, {"message": "Server Error"}, {})
    assert not tasks._retryable(spent, server_error)  # type: ignore[arg-type]
    fresh = SimpleNamespace(request=SimpleNamespace(retries=0))
    assert tasks._retryable(fresh, server_error)  # type: ignore[arg-type]


def test_an_idempotent_call_retried_inside_pygithub_pauses_the_installation(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory, tmp_path: Path
) -> None:
    """PyGithub sleeps out a PATCH's Retry-After itself and succeeds; the pause it saw is
    still shared, so the installation's other tasks wait for the same moment."""
    import threading

    from bot import pauses

    _repo_with_pull(git_repo, fake)
    settings = from_env(
        {
            **_env(key, fake.api_url),
            "NUMCHECK_BROKER_PREFIX": f"numcheck-pause-{tmp_path.name}:",
        }
    )
    client = GitHubClient(settings, TokenCache(settings), 7)
    run_id = client.create_check_run("octo/numlib", {"name": "n", "head_sha": "a" * 40})["id"]
    fake.fail("PATCH", r"/check-runs/\d+$", 403, retry_after=3)
    seen: list[float] = []
    watcher = threading.Thread(
        target=lambda: (time.sleep(1.0), seen.append(pauses.remaining(settings, 7)))
    )
    watcher.start()
    client.update_check_run("octo/numlib", run_id, {"status": "in_progress"})
    watcher.join()
    assert [c.status for c in fake.calls("PATCH", r"/check-runs/\d+$")] == [403, 200]
    assert seen and 1.0 < seen[0] <= 2.1


def _finding(
    line: int, call: str, op: str = "log", end_line: int | None = None, status: Status = "confirmed"
) -> Finding:
    """A finding the publishing policy comments on (confirmed) unless told otherwise."""
    return Finding(
        path="model/loss.py",
        line=line,
        column=8,
        end_line=end_line or line,
        end_column=20,
        function="loss",
        op=op,
        framework="torch",
        call=call,
        operand="p",
        why=f"`{call}` can be NaN",
        rule=f"{op}-domain",
        status=status,
    )


def test_publish_comments_on_proven_findings_and_holds_back_the_rest(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    repo = _repo_with_pull(git_repo, fake)
    settings = from_env(_env(key, fake.api_url))
    client = GitHubClient(settings, TokenCache(settings), 7)
    head = repo.sha("feature")
    proven = _finding(5, "torch.log(p)")
    suspicion = _finding(6, "p / q.norm()", "div", status="potential")
    definite = _finding(7, "torch.log(torch.softmax(z, -1))", status="not-triggered")
    definite.rule, definite.fingerprint = "log-softmax", ""
    definite.__post_init__()
    result = AnalysisResult(
        repo="octo/numlib",
        base=None,
        head=head,
        config={},
        findings=[proven, suspicion, definite],
        files_analyzed=1,
    )
    run = client.create_check_run("octo/numlib", {"name": "numcheck", "head_sha": head})
    out = publish(
        client,
        repo="octo/numlib",
        number=3,
        result=result,
        check_run_id=run["id"],
        lines={"model/loss.py": {5, 6, 7}},
        state={},
        save=lambda s: None,
        bot_login="numcheck[bot]",
    )
    assert sorted(c["line"] for c in fake.state.review_comments) == [5, 7]
    assert out.body_only == []  # held back is not "over the cap"
    review = fake.state.reviews[0]["body"]
    assert "1 finding held back from inline comments" in review and "1 potential" in review
    levels = {a["start_line"]: a["annotation_level"] for a in fake.state.annotations[run["id"]]}
    assert levels == {5: "warning", 6: "notice", 7: "warning"}
    summary = fake.state.check_runs[0]["output"]["summary"]
    assert "1 finding held back from inline comments" in summary
    assert "held back (not proven)" in fake.state.check_runs[0]["output"]["text"]

    # the repository asks for every finding inline: the suspicion gets its comment too
    fake.state.reviews.clear()
    every = AnalysisResult(
        repo="octo/numlib",
        base=None,
        head=head,
        config={"comment_on": "potential"},
        findings=[proven, suspicion, definite],
        files_analyzed=1,
    )
    publish(
        client,
        repo="octo/numlib",
        number=3,
        result=every,
        check_run_id=run["id"],
        lines={"model/loss.py": {5, 6, 7}},
        state={},
        save=lambda s: None,
        bot_login="numcheck[bot]",
    )
    assert sorted(c["line"] for c in fake.state.review_comments) == [5, 6, 7]


def test_publish_twice_posts_each_comment_once(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    repo = _repo_with_pull(git_repo, fake)
    settings = from_env(_env(key, fake.api_url))
    client = GitHubClient(settings, TokenCache(settings), 7)
    head = repo.sha("feature")
    result = AnalysisResult(
        repo="octo/numlib",
        base=repo.sha("main"),
        head=head,
        config={},
        findings=[_finding(5, "torch.log(p)"), _finding(6, "p / q.norm()", "div", end_line=7)],
        files_analyzed=1,
    )
    lines = commentable_lines(client.pull_files(client.pull("octo/numlib", 3)))
    run = client.create_check_run("octo/numlib", {"name": "numcheck", "head_sha": head})
    state: dict[str, Any] = {}
    for _ in range(2):  # a retried publish
        out = publish(
            client,
            repo="octo/numlib",
            number=3,
            result=result,
            check_run_id=run["id"],
            lines=lines,
            state=state,
            save=lambda s: None,
            bot_login="numcheck[bot]",
        )
    assert len(fake.state.reviews) == 1 and len(fake.state.review_comments) == 2
    multi = [c for c in fake.state.review_comments if c["start_line"]]
    assert multi and multi[0]["start_line"] == 6 and multi[0]["line"] == 7
    assert len(fake.state.annotations[run["id"]]) == 2
    assert fake.state.check_runs[0]["conclusion"] == "neutral"
    assert set(out.comment_ids) == {f.fingerprint for f in result.findings}

    # the file no longer parses: its findings are not "resolved", they were not looked at
    broken = AnalysisResult(
        repo="octo/numlib",
        base=None,
        head=head,
        config={},
        errors=[StageError("static", "does not parse", "model/loss.py")],
    )
    fixed = AnalysisResult(repo="octo/numlib", base=None, head=head, config={}, files_analyzed=1)
    replies = []
    for later in (broken, fixed, fixed):
        publish(
            client,
            repo="octo/numlib",
            number=3,
            result=later,
            check_run_id=run["id"],
            lines=lines,
            state={},
            save=lambda s: None,
            bot_login="numcheck[bot]",
        )
        replies.append(len([c for c in fake.state.review_comments if "in_reply_to_id" in c]))
    assert replies == [0, 2, 2]
    assert all(
        "Resolved in" in c["body"] for c in fake.state.review_comments if "in_reply_to_id" in c
    )
    assert len(fake.state.review_comments) == 4  # nothing deleted


def test_a_suggestion_block_covers_exactly_the_commented_lines(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    repo = _repo_with_pull(git_repo, fake)
    settings = from_env(_env(key, fake.api_url))
    client = GitHubClient(settings, TokenCache(settings), 7)
    head = repo.sha("feature")
    finding = _finding(6, "p / q.norm()", "div", end_line=7)
    finding.fix = {
        "kind": "epsilon",
        "replacement": ["    b = p / (q.norm() + 1e-6)", "    return a.sum() + b.sum()"],
        "validation": {"reproducer_passes": True},
    }
    result = AnalysisResult(repo="octo/numlib", base=None, head=head, config={}, findings=[finding])
    run = client.create_check_run("octo/numlib", {"name": "numcheck", "head_sha": head})
    publish(
        client,
        repo="octo/numlib",
        number=3,
        result=result,
        check_run_id=run["id"],
        lines={"model/loss.py": {5, 6, 7}},
        state={},
        save=lambda s: None,
        bot_login="numcheck[bot]",
    )
    (comment,) = fake.state.review_comments
    assert (comment["start_line"], comment["line"], comment["side"]) == (6, 7, "RIGHT")
    block = comment["body"].split("```suggestion\n", 1)[1].split("\n```", 1)[0]
    assert block.splitlines() == finding.fix["replacement"]


@pytest.mark.parametrize("commentable", [{4, 5, 6, 7}, {6, 7}])
def test_a_fix_wider_than_its_finding_widens_the_comment_where_github_allows(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory, commentable: set[int]
) -> None:
    """A masked fill fixed two lines above the softmax: the block must replace lines 5-7, so
    the comment covers 5-7 when those lines are in the diff, else it stays on the finding's
    own lines and shows the fix as a diff (a block there would replace the wrong lines)."""
    repo = _repo_with_pull(git_repo, fake)
    settings = from_env(_env(key, fake.api_url))
    client = GitHubClient(settings, TokenCache(settings), 7)
    head = repo.sha("feature")
    finding = _finding(6, "p / q.norm()", "div", end_line=7)
    finding.fix = {
        "status": "validated",
        "kind": "epsilon",
        "start_line": 5,
        "end_line": 7,
        "replacement": [
            "    a = p",
            "    b = p / (q.norm() + 1e-6)",
            "    return a.sum() + b.sum()",
        ],
        "diff": "--- a/model/loss.py\n+++ b/model/loss.py\n@@ -6 +6 @@\n-x\n+y\n",
        "validation": {"reproducer_passes": True},
    }
    result = AnalysisResult(repo="octo/numlib", base=None, head=head, config={}, findings=[finding])
    run = client.create_check_run("octo/numlib", {"name": "numcheck", "head_sha": head})
    publish(
        client,
        repo="octo/numlib",
        number=3,
        result=result,
        check_run_id=run["id"],
        lines={"model/loss.py": commentable},
        state={},
        save=lambda s: None,
        bot_login="numcheck[bot]",
    )
    (comment,) = fake.state.review_comments
    if 5 in commentable:
        assert (comment["start_line"], comment["line"]) == (5, 7)
        block = comment["body"].split("```suggestion\n", 1)[1].split("\n```", 1)[0]
        assert block.splitlines() == finding.fix["replacement"]
    else:
        assert (comment["start_line"], comment["line"]) == (6, 7)
        assert "```suggestion" not in comment["body"] and "+y" in comment["body"]


def test_a_lost_answer_is_not_posted_twice(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    """GitHub did the work but the answer was a 500: the retry reads back what went out."""
    repo = _repo_with_pull(git_repo, fake)
    settings = from_env(_env(key, fake.api_url))
    client = GitHubClient(settings, TokenCache(settings), 7)
    head = repo.sha("feature")
    result = AnalysisResult(
        repo="octo/numlib", base=None, head=head, config={}, findings=[_finding(5, "torch.log(p)")]
    )
    run = client.create_check_run("octo/numlib", {"name": "numcheck", "head_sha": head})
    fake.fail("POST", r"/pulls/3/reviews$", 500, after=True)
    state: dict[str, Any] = {}
    with pytest.raises(GithubException):
        publish(
            client,
            repo="octo/numlib",
            number=3,
            result=result,
            check_run_id=run["id"],
            lines={"model/loss.py": {5}},
            state=state,
            save=lambda s: None,
            bot_login="numcheck[bot]",
        )
    assert len(fake.state.reviews) == 1  # it did go out
    out = publish(
        client,
        repo="octo/numlib",
        number=3,
        result=result,
        check_run_id=run["id"],
        lines={"model/loss.py": {5}},
        state=state,
        save=lambda s: None,
        bot_login="numcheck[bot]",
    )
    assert len(fake.state.reviews) == 1 and len(fake.state.review_comments) == 1
    assert out.review_id == fake.state.reviews[0]["id"]
    # a check run whose creation answer was lost is found again by head SHA and name
    from bot.publish import ensure_check_run

    fake.fail("POST", r"/check-runs$", 500, after=True)
    other = repo.sha("main")
    with pytest.raises(GithubException):
        ensure_check_run(client, "octo/numlib", other, "numcheck", "starting", None)
    ensure_check_run(client, "octo/numlib", other, "numcheck", "starting", None)
    assert len([r for r in fake.state.check_runs if r["head_sha"] == other]) == 1


def test_annotations_go_in_batches_of_fifty(
    key: tuple[Path, str], fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    repo = _repo_with_pull(git_repo, fake)
    settings = from_env(_env(key, fake.api_url))
    client = GitHubClient(settings, TokenCache(settings), 7)
    head = repo.sha("feature")
    findings = [_finding(5, f"torch.log(p{i})") for i in range(120)]
    result = AnalysisResult(repo="octo/numlib", base=None, head=head, config={}, findings=findings)
    run = client.create_check_run("octo/numlib", {"name": "numcheck", "head_sha": head})
    publish(
        client,
        repo="octo/numlib",
        number=3,
        result=result,
        check_run_id=run["id"],
        lines={"model/loss.py": {5}},
        state={},
        save=lambda s: None,
        max_inline=30,
        bot_login="numcheck[bot]",
    )
    patches = fake.calls("PATCH", rf"/check-runs/{run['id']}$")
    assert [len(p.body["output"].get("annotations", [])) for p in patches] == [50, 50, 20]
    assert len(fake.state.annotations[run["id"]]) == 120
    assert len(fake.state.review_comments) == 30  # the cap; the rest are in the body
    assert "Findings not commented inline" in fake.state.reviews[0]["body"]


# --- persistence ------------------------------------------------------------------------------
TABLES = {"installations", "installation_repositories", "deliveries", "analyses", "findings"}


def _check_migrations(url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from bot.models import Base

    db.upgrade(url)
    db.upgrade(url)  # idempotent
    assert set(inspect(db.engine_for(url)).get_table_names()) >= TABLES
    with db.engine_for(url).connect() as conn:  # the migrations build what the models declare
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    db.ping(url)
    db.downgrade(url)
    assert not TABLES & set(inspect(db.engine_for(url)).get_table_names())
    db.upgrade(url)


def test_migrations_on_sqlite(tmp_path: Path) -> None:
    _check_migrations(f"sqlite:///{tmp_path / 'numcheck.db'}")


def test_migrations_on_postgresql() -> None:
    with postgres_database() as url:
        _check_migrations(url)
        db.engine_for(url).dispose()


def test_healthz_reports_an_unreachable_broker_and_the_web_rejects_before_parsing(
    tmp_path: Path, key: tuple[Path, str]
) -> None:
    from bot.web import create_app

    env = app_env(
        key_path=key[0],
        api_url="http://127.0.0.1:9",
        database_url=f"sqlite:///{tmp_path / 'h.db'}",
        broker_url="redis://127.0.0.1:1/0",
    )
    client = create_app(from_env(env)).test_client()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json == {
        "status": "degraded",
        "database": "ok",
        "broker": response.json["broker"],
    }
    assert response.json["broker"].startswith("unreachable")
    body = b'{"zen": "Keep it logically awesome."}'
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-1"}
    assert client.post("/webhook", data=body, headers=headers).status_code == 401
    signed = {**headers, "X-Hub-Signature-256": signature(SECRET.encode(), body)}
    assert client.post("/webhook", data=body, headers=signed).json["status"] == "pong"
    again = client.post("/webhook", data=body, headers=signed)
    assert again.status_code == 200 and again.json["status"] == "duplicate delivery"
    no_id = {k: v for k, v in signed.items() if k != "X-GitHub-Delivery"}
    assert client.post("/webhook", data=body, headers=no_id).status_code == 400


def test_the_routers_handle_the_events_the_manifest_subscribes_to() -> None:
    import json

    from bot.features import routers

    text = (Path(__file__).resolve().parent.parent / "app.yml").read_text(encoding="utf-8")
    manifest = json.loads(
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    )
    handled = set().union(*(router.events() for router in routers()))
    always = {"ping", "installation", "installation_repositories"}  # sent to every App
    assert handled == set(manifest["default_events"]) | always


def test_the_check_run_fails_only_on_confirmed_findings_and_only_when_asked() -> None:
    from bot.publish import conclusion

    potential = _finding(3, "torch.log(p)", status="potential")
    confirmed = dataclasses.replace(_finding(5, "torch.log(q)"), status="confirmed")

    def result(findings: list[Finding], **config: str) -> AnalysisResult:
        return AnalysisResult(
            repo="octo/numlib", base=None, head="h", config=dict(config), findings=findings
        )

    assert conclusion(result([])) == "success"
    assert conclusion(result([potential, confirmed])) == "neutral"
    assert conclusion(result([potential], check_failure="confirmed")) == "neutral"
    assert conclusion(result([potential, confirmed], check_failure="confirmed")) == "failure"
    # a proof that had to cancel the code's own epsilon (`q + 1e-8` below 0) blocks nothing
    guarded = dataclasses.replace(
        _finding(7, "torch.log(q + 1e-8)"),
        status="confirmed",
        operand="q + 1e-8",
        trigger={"box": {"source": "synthesised"}},
    )
    assert conclusion(result([potential, guarded], check_failure="confirmed")) == "neutral"


# --- deliveries -------------------------------------------------------------------------------
@pytest.fixture
def bound(
    tmp_path: Path, key: tuple[Path, str], fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The worker's settings bound to a fresh SQLite database and the test server; the
    database URL."""
    from bot import worker

    url = f"sqlite:///{tmp_path / 'tasks.db'}"
    db.upgrade(url)
    settings = from_env(
        app_env(
            key_path=key[0],
            api_url=fake.api_url,
            database_url=url,
            broker_url="redis://127.0.0.1:1/0",
        )
    )
    monkeypatch.setattr(worker, "_bound", settings)
    worker._tokens.cache_clear()
    yield url
    worker._tokens.cache_clear()
    db.engine_for(url).dispose()


def _analysis_row(url: str, head: str) -> int:
    from bot.db import session_scope
    from bot.models import Analysis

    with session_scope(url) as s:
        row = Analysis(
            installation_id=7,
            repo="octo/numlib",
            pr_number=3,
            head_sha=head,
            status="running",
            reason="test",
            timings={},
            publish_state={},
        )
        s.add(row)
        s.flush()
        return row.id


def test_an_analysis_whose_worker_died_three_times_fails_visibly_and_stops(
    bound: str, fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    """The cap on the attempt counter, driven through the real task (in process): three
    deliveries that started and never ended are what a worker process dying mid-analysis
    leaves behind (tests/test_app_e2e.py kills real pool processes for the same)."""
    from bot import analyses, tasks

    repo = _repo_with_pull(git_repo, fake)
    head = repo.sha("feature")
    analysis_id = _analysis_row(bound, head)
    deliveries = [analyses.begin_delivery(analysis_id) for _ in range(analyses.MAX_DELIVERIES)]
    assert deliveries == [1, 2, 3]
    assert tasks.analyze_task.apply(args=[analysis_id, "static"]).get() == "gave up"
    runs = fake.state.check_runs
    assert len(runs) == 1 and runs[0]["head_sha"] == head
    assert runs[0]["status"] == "completed" and runs[0]["conclusion"] == "neutral"
    summary = runs[0]["output"]["summary"]
    assert "died 3 times" in summary and "stopped trying" in summary, summary
    row = analyses.load_analysis(analysis_id)
    assert row is not None and row.status == "failed" and "died 3 times" in row.error
    assert row.check_run_id == runs[0]["id"]
    # a further delivery of the same message does nothing: no new run, no new GitHub call
    calls = len(fake.state.requests)
    assert tasks.analyze_task.apply(args=[analysis_id, "static"]).get() == "already failed"
    assert len(fake.state.requests) == calls and len(fake.state.check_runs) == 1


def test_a_delivery_that_ends_in_python_is_not_counted(
    bound: str, fake: FakeGitHub, git_repo: GitRepoFactory
) -> None:
    from bot import analyses, tasks

    _repo_with_pull(git_repo, fake)
    analysis_id = _analysis_row(bound, "0" * 40)  # not the PR's head: superseded at once
    analyses.begin_delivery(analysis_id)  # one crash earlier
    assert tasks.analyze_task.apply(args=[analysis_id, "static"]).get() == "superseded"
    row = analyses.load_analysis(analysis_id)
    assert row is not None and row.deliveries == 0 and row.status == "superseded"


def test_a_signed_body_nested_too_deep_gets_400_not_500(
    tmp_path: Path, key: tuple[Path, str]
) -> None:
    """Regression: json.loads raised RecursionError on a correctly signed, deeply nested body
    and the web answered 500. The depth is checked on the bytes, before parsing; nothing is
    recorded, so a corrected redelivery with the same id still runs."""
    from app_support import WebServer, deliver
    from sqlalchemy import select

    from bot.models import Delivery
    from bot.web import create_app
    from bot.webhooks import MAX_JSON_DEPTH, json_too_deep

    env = app_env(
        key_path=key[0],
        api_url="http://127.0.0.1:9",
        database_url=f"sqlite:///{tmp_path / 'deep.db'}",
        broker_url="redis://127.0.0.1:1/0",
    )
    settings = from_env(env)
    deep = b'{"zen": "x", "hook": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    within = (
        b'{"zen": "[[[[ {{ not brackets \\" [[", "hook": '
        + b"[" * (MAX_JSON_DEPTH - 2)
        + b"{}"
        + b"]" * (MAX_JSON_DEPTH - 2)
        + b"}"
    )
    assert json_too_deep(deep) and not json_too_deep(within)
    assert json_too_deep(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    assert not json_too_deep(b"]]][[[")  # not JSON, and json.loads says so
    with WebServer(create_app(settings)) as web:
        status, body = deliver(web.url, "ping", deep, delivery="deep-1")
        assert status == 400 and body["error"] == (
            f"the body nests JSON deeper than {MAX_JSON_DEPTH} levels"
        )
        status, body = deliver(web.url, "ping", within, delivery="deep-2")
        assert status == 202 and body["status"] == "pong", body
        assert deliver(web.url, "ping", b"[[[", delivery="deep-3") == (
            400,
            {"error": "the body is not JSON"},
        )
    with db.session_scope(settings.database_url) as s:
        assert set(s.scalars(select(Delivery.id))) == {"deep-2"}


@pytest.mark.parametrize("broker", ["redis", "filesystem"])
def test_outsiders_get_one_command_reply_per_pull_request_in_the_window(
    broker: str, fake: FakeGitHub, key: tuple[Path, str], tmp_path: Path
) -> None:
    """Regression: every outsider's `/numcheck ...` cost a reaction and a bot comment. Now
    one per user and PR in NUMCHECK_COMMAND_REPLY_MINUTES; people with write access are not
    limited, and a retried task (the same comment) still gets its reply out."""
    import secrets

    from bot.features.commands import run_command

    extra = {
        "NUMCHECK_BROKER_PREFIX": f"numcheck-test-{secrets.token_hex(4)}:",
        "NUMCHECK_COMMAND_REPLY_MINUTES": "0.02",
    }  # 1.2 s
    if broker == "filesystem":
        extra.update(
            NUMCHECK_BROKER_URL="filesystem://", NUMCHECK_BROKER_FOLDER=str(tmp_path / "broker")
        )
    settings = from_env(_env(key, fake.api_url, **extra))
    client = GitHubClient(settings, TokenCache(settings), 7)
    ids = iter(range(500, 600))

    def command(
        login: str,
        number: int = 3,
        association: str = "CONTRIBUTOR",
        comment_id: int | None = None,
        body: str = "/numcheck help",
    ) -> str:
        job = {
            "installation": {"id": 7},
            "repository": "octo/cmd",
            "number": number,
            "comment": {
                "id": comment_id or next(ids),
                "body": body,
                "user": login,
                "author_association": association,
            },
        }
        return run_command(settings, job, client)

    def answers() -> int:
        return len(fake.state.issue_comments)

    try:
        assert command("visitor", comment_id=1) == "help" and answers() == 1
        assert command("visitor", body="/numcheck rerun").startswith("not answered: visitor")
        assert command("Visitor", body="/numcheck frobnicate").startswith("not answered")
        assert answers() == 1 and len(fake.state.reactions) == 1  # nothing at all went out
        assert command("visitor", comment_id=1) == "help"  # the same comment, retried
        assert command("visitor", number=4) == "help"  # another pull request
        assert command("passer-by") == "help"  # another user
        assert command("maintainer", association="MEMBER") == "help"
        assert command("maintainer", association="MEMBER") == "help"  # not limited
        assert answers() == 6
        time.sleep(1.3)  # the window has passed
        assert command("visitor", body="/numcheck rerun") == "refused"
        assert "Sorry @visitor" in fake.state.issue_comments[-1]["body"]
        unlimited = dataclasses.replace(settings, command_reply_minutes=0)
        for _ in range(2):
            job = {
                "installation": {"id": 7},
                "repository": "octo/cmd",
                "number": 3,
                "comment": {
                    "id": next(ids),
                    "body": "/numcheck help",
                    "user": "visitor",
                    "author_association": "NONE",
                },
            }
            assert run_command(unlimited, job, client) == "help"
        assert answers() == 9
    finally:
        client.close()
        if broker == "redis":
            from app_support import clean_redis

            clean_redis(settings.broker_url, settings.broker_prefix)
