"""A delivery is one transaction, and its broker messages go out only once it has committed.

In-process (Flask's test client) against real Redis and SQLite: a router that fails after
another one recorded an analysis leaves no row and no message, and GitHub's redelivery of the
same delivery then runs; a redelivery of a delivery that was recorded runs nothing; a
`/numcheck` command whose message cannot be sent is answered 503 and forgotten, so that the
redelivery runs it. And bot/db's unit of work itself: nested scopes join it, and callbacks run
after its commit, never after a rollback."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from app_support import (
    SECRET,
    app_env,
    clean_redis,
    comment_payload,
    ensure_redis,
    make_key,
    pull_payload,
)
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from bot import db
from bot.models import Analysis, Delivery
from bot.settings import Settings, from_env
from bot.webhooks import Router, signature

API = "http://127.0.0.1:9"


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    key_path, _ = make_key(tmp_path)
    prefix = f"numcheck-delivery-{secrets.token_hex(4)}:"
    url = ensure_redis()
    env = app_env(
        key_path=key_path,
        api_url=API,
        database_url=f"sqlite:///{tmp_path / 'n.db'}",
        broker_url=url,
        prefix=prefix,
    )
    try:
        yield from_env(env)
    finally:
        clean_redis(url, prefix)


def _post(client: Any, event: str, payload: dict[str, Any], delivery: str) -> Any:
    body = json.dumps(payload).encode()
    return client.post(
        "/webhook",
        data=body,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": signature(SECRET.encode(), body),
        },
    )


def _counts(database_url: str) -> tuple[int, int]:
    """(analyses, deliveries) committed, read on a connection of the test's own."""
    engine = create_engine(database_url)
    try:
        with Session(engine) as s:
            analyses = s.scalar(select(func.count()).select_from(Analysis)) or 0
            deliveries = s.scalar(select(func.count()).select_from(Delivery)) or 0
        return int(analyses), int(deliveries)
    finally:
        engine.dispose()


def _queued(settings: Settings) -> list[str]:
    """The task ids waiting on the static queue."""
    queue = redis.Redis.from_url(settings.broker_url)
    raw = queue.lrange(f"{settings.broker_prefix}static", 0, -1)
    return [json.loads(m)["headers"]["id"] for m in raw]


def _opened(number: int) -> dict[str, Any]:
    return pull_payload(
        "opened",
        repo="octo/tx",
        number=number,
        head="a" * 40,
        base="b" * 40,
        installation=3,
        api_url=API,
    )


def test_a_router_that_fails_after_another_recorded_work_leaves_nothing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pulls router records an analysis, then a later router raises: the answer is 503,
    and neither the analysis nor the delivery is committed, nor its message sent. The same
    delivery sent again (GitHub's redelivery) is then analysed once."""
    from bot import web
    from bot.features import pulls

    broken = Router("broken")

    @broken.register("pull_request", "opened")
    def fail(event: Any, context: Any) -> str:
        raise RuntimeError("a router's bug")

    monkeypatch.setattr(web, "routers", lambda: [pulls.router, broken])
    failing = web.create_app(settings).test_client()
    response = _post(failing, "pull_request", _opened(7), "delivery-7")
    assert response.status_code == 503
    assert "redeliver" in response.json["error"]
    assert _counts(settings.database_url) == (0, 0)
    assert _queued(settings) == []

    monkeypatch.setattr(web, "routers", lambda: [pulls.router])
    fixed = web.create_app(settings).test_client()
    again = _post(fixed, "pull_request", _opened(7), "delivery-7")
    assert again.status_code == 202, again.json
    analysis_id = int(again.json["status"].split()[-1])
    assert _counts(settings.database_url) == (1, 1)
    assert _queued(settings) == [f"numcheck-analysis-{analysis_id}-static"]


def test_a_redelivery_of_a_recorded_delivery_runs_nothing(settings: Settings) -> None:
    from bot.web import create_app

    client = create_app(settings).test_client()
    first = _post(client, "pull_request", _opened(8), "delivery-8")
    assert first.status_code == 202, first.json
    again = _post(client, "pull_request", _opened(8), "delivery-8")
    assert again.status_code == 200 and again.json["status"] == "duplicate delivery"
    assert _counts(settings.database_url) == (1, 1)
    assert len(_queued(settings)) == 1
    with Session(create_engine(settings.database_url)) as s:  # the first is still the active one
        assert s.scalars(select(Analysis.status)).all() == ["queued"]


def test_a_new_push_supersedes_in_the_same_transaction(settings: Settings) -> None:
    """A second head for the PR supersedes the first analysis and queues its own; the first
    one's row was changed by the delivery that superseded it, clock included."""
    from bot.web import create_app

    client = create_app(settings).test_client()
    first = _post(client, "pull_request", _opened(9), "delivery-9a")
    pushed = _opened(9)
    pushed["pull_request"]["head"]["sha"] = "c" * 40
    before = datetime.now(UTC).replace(tzinfo=None)  # SQLite gives naive UTC back
    second = _post(client, "pull_request", pushed, "delivery-9b")
    assert first.status_code == second.status_code == 202
    with Session(create_engine(settings.database_url)) as s:
        rows = s.scalars(select(Analysis).order_by(Analysis.id)).all()
        assert [(r.head_sha[0], r.status) for r in rows] == [("a", "superseded"), ("c", "queued")]
        assert rows[0].updated_at >= before  # the reaper's clock restarted
    assert len(_queued(settings)) == 2  # the first's message is revoked, not taken back


def test_a_command_whose_message_cannot_be_sent_is_forgotten_for_redelivery(
    tmp_path: Path,
) -> None:
    """`/numcheck rerun` has no row of its own: its message is the record. With the broker
    down the answer is 503 and the delivery is not kept, so GitHub's redelivery is run."""
    from bot.web import create_app

    key_path, _ = make_key(tmp_path)
    down = from_env(
        app_env(
            key_path=key_path,
            api_url=API,
            database_url=f"sqlite:///{tmp_path / 'down.db'}",
            broker_url="redis://127.0.0.1:1/0",
        )
    )
    client = create_app(down).test_client()
    payload = comment_payload(
        "/numcheck rerun", repo="octo/tx", number=4, installation=3, api_url=API
    )
    response = _post(client, "issue_comment", payload, "delivery-c")
    assert response.status_code == 503
    assert _counts(down.database_url) == (0, 0)


def test_scopes_inside_a_unit_of_work_join_it_and_callbacks_wait_for_its_commit(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'u.db'}"
    db.upgrade(url)
    ran: list[str] = []
    with db.unit_of_work(url) as unit:
        with db.session_scope(url) as s:
            assert s is unit.session
            s.add(Delivery(id="inner", event="ping", outcome=""))
        db.after_commit(lambda: ran.append("sent"))
        assert _counts(url) == (0, 0)  # not yet visible to another connection
        assert ran == [] and not unit.committed
    assert unit.committed and ran == ["sent"]
    assert _counts(url) == (0, 1)

    with pytest.raises(RuntimeError, match="boom"), db.unit_of_work(url):
        with db.session_scope(url) as s:
            s.add(Delivery(id="rolled-back", event="ping", outcome=""))
        db.after_commit(lambda: ran.append("never"))
        raise RuntimeError("boom")
    assert ran == ["sent"]
    assert _counts(url) == (0, 1)

    db.after_commit(lambda: ran.append("at once"))  # no unit open: nothing to wait for
    assert ran == ["sent", "at once"]
    with db.unit_of_work(url), pytest.raises(RuntimeError, match="already open"):
        db.unit_of_work(url).__enter__()
