"""The database as the source of truth for work: no acknowledged delivery is lost.

`numcheck serve` (web, worker and reaper in one command) is started for real, once on its
embedded filesystem broker and once on Redis: the first deliveries go in the moment its port
accepts a connection and must be reviewed; an analysis whose message never reached the broker
must be found by the reaper and reviewed exactly once. In-process, against real Redis and
SQLite: the reaper gives up visibly past its limit, only one of several reapers takes a row,
and old deliveries and finished analyses are pruned."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from app_support import (
    APP_ID,
    SECRET,
    app_env,
    clean_redis,
    deliver,
    ensure_redis,
    free_port,
    make_key,
    pull_payload,
    wait_for,
)
from conftest import GitRepo, GitRepoFactory
from github_fake import FakeGitHub, FakePull
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from bot.models import Analysis, Delivery, FindingRow
from bot.settings import SettingsError, from_env

INSTALLATION = 3
BASE = {
    ".numcheck.toml": 'dynamic = false\ncomment_on = "potential"\n',
    "m.py": "import torch\n\n\ndef f(x):\n    return x\n",
}
HEAD = {"m.py": "import torch\n\n\ndef f(x):\n    return torch.log(x)\n"}


@contextmanager
def serve(
    exe: str, tmp: Path, fake: FakeGitHub, key_path: Path, broker: str, port: int = 0, **extra: str
) -> Iterator[tuple[subprocess.Popen[str], Path, list[str]]]:
    """`numcheck serve` as a user starts it; yields the process, its data directory and the
    lines it printed so far (read on a thread)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMCHECK_")}
    env.update(
        {
            "NUMCHECK_APP_ID": str(APP_ID),
            "NUMCHECK_PRIVATE_KEY": str(key_path),
            "NUMCHECK_WEBHOOK_SECRET": SECRET,
            "NUMCHECK_GITHUB_API_URL": fake.api_url,
            "NUMCHECK_WRITE_INTERVAL": "0",
            "NUMCHECK_BOT_LOGIN": "numcheck[bot]",
            **extra,
        }
    )
    prefix = ""
    if broker == "redis":
        prefix = f"numcheck-outbox-{secrets.token_hex(4)}:"
        env.update(NUMCHECK_BROKER_URL=ensure_redis(), NUMCHECK_BROKER_PREFIX=prefix)
    data = tmp / "data"
    proc = subprocess.Popen(
        [exe, "serve", "--port", str(port), "--data-dir", str(data)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        yield proc, data, lines
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if prefix:
            clean_redis(env["NUMCHECK_BROKER_URL"], prefix)


def _repo(git_repo: GitRepoFactory, fake: FakeGitHub, name: str, numbers: range) -> GitRepo:
    repo = git_repo(BASE, HEAD, name=name.replace("/", "_"))
    fake.add_repo(name, repo.root)
    for number in numbers:
        fake.add_pull(FakePull(name, number, "main", "feature"))
    return repo


def _reviews(fake: FakeGitHub, name: str) -> list[dict[str, Any]]:
    with fake.lock:
        return [dict(r) for r in fake.state.reviews if r["repo"] == name]


def _runs(fake: FakeGitHub, name: str) -> list[dict[str, Any]]:
    with fake.lock:
        return [dict(r) for r in fake.state.check_runs if r["repo"] == name]


@pytest.fixture(params=["embedded", "redis"])
def broker(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_deliveries_sent_as_the_port_opens_are_reviewed(
    tmp_path: Path, git_repo: GitRepoFactory, broker: str, numcheck_exe: str
) -> None:
    key_path, public = make_key(tmp_path)
    name = "octo/startup"
    numbers = range(1, 4)
    with FakeGitHub(APP_ID, public) as fake:
        repo = _repo(git_repo, fake, name, numbers)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with serve(numcheck_exe, tmp_path, fake, key_path, broker, port) as (proc, _, lines):
            deadline = time.monotonic() + 60
            while True:  # knock until the port answers, then deliver at once
                assert proc.poll() is None, "".join(lines)
                assert time.monotonic() < deadline, "".join(lines)
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.05).close()
                    break
                except OSError:
                    time.sleep(0.001)
            opened = time.monotonic()
            answers: list[tuple[int, dict[str, Any]]] = []

            def send(number: int) -> None:
                answers.append(
                    deliver(
                        url,
                        "pull_request",
                        pull_payload(
                            "opened",
                            repo=name,
                            number=number,
                            head=repo.sha("feature"),
                            base=repo.sha("main"),
                            installation=INSTALLATION,
                            api_url=fake.api_url,
                        ),
                    )
                )

            senders = [threading.Thread(target=send, args=(n,)) for n in numbers]
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join()
            first_ack_ms = (time.monotonic() - opened) * 1000
            assert [status for status, _ in answers] == [202] * len(numbers), answers
            assert all(body["status"].startswith("queued analysis") for _, body in answers)
            wait_for(
                lambda: len(_reviews(fake, name)) == len(numbers),
                90,
                "a review of every pull request",
                lambda: "".join(lines),
            )
            assert sorted(r["number"] for r in _reviews(fake, name)) == list(numbers)
            runs = _runs(fake, name)  # one head: its check run is shared by the three PRs
            assert len(runs) == 1 and runs[0]["status"] == "completed", runs
            assert first_ack_ms < 10_000, first_ack_ms


def _insert_lost(database_url: str, name: str, number: int, head: str, base: str) -> int:
    """An analysis recorded as the web records it, whose broker message never arrived."""
    engine = create_engine(database_url)
    try:
        with Session(engine) as s:
            row = Analysis(
                installation_id=INSTALLATION,
                repo=name,
                pr_number=number,
                head_sha=head,
                base_sha=base,
                status="queued",
                reason="pull_request.opened",
                timings={},
                publish_state={},
            )
            s.add(row)
            s.flush()
            row.task_id = f"numcheck-analysis-{row.id}-static"
            s.commit()
            return row.id
    finally:
        engine.dispose()


def _row(database_url: str, analysis_id: int) -> Analysis | None:
    engine = create_engine(database_url)
    try:
        with Session(engine, expire_on_commit=False) as s:
            return s.get(Analysis, analysis_id)
    finally:
        engine.dispose()


def test_an_analysis_whose_message_was_lost_is_reaped_and_reviewed_once(
    tmp_path: Path, git_repo: GitRepoFactory, broker: str, numcheck_exe: str
) -> None:
    key_path, public = make_key(tmp_path)
    name = "octo/lost"
    with FakeGitHub(APP_ID, public) as fake:
        repo = _repo(git_repo, fake, name, range(7, 8))
        with serve(
            numcheck_exe,
            tmp_path,
            fake,
            key_path,
            broker,
            NUMCHECK_REAP_AFTER="2",
            NUMCHECK_REAP_INTERVAL="0.3",
        ) as (proc, data, lines):
            wait_for(
                lambda: any("listening on" in line for line in lines),
                60,
                "serve to listen",
                lambda: "".join(lines),
            )
            database_url = f"sqlite:///{data / 'numcheck.db'}"
            analysis_id = _insert_lost(database_url, name, 7, repo.sha("feature"), repo.sha("main"))
            time.sleep(1.0)
            assert not _runs(fake, name), "nothing may run before the deadline"
            wait_for(
                lambda: _reviews(fake, name),
                60,
                "the reaper's recovery to be reviewed",
                lambda: "".join(lines),
            )
            wait_for(
                lambda: (
                    (row := _row(database_url, analysis_id)) is not None
                    and row.status == "published"
                ),
                30,
                "the analysis to be published",
            )
            time.sleep(3.0)  # past the deadline again: a second reap must change nothing
            assert proc.poll() is None
            row = _row(database_url, analysis_id)
            assert row is not None and row.status == "published" and row.requeues >= 1
            assert len(_reviews(fake, name)) == 1
            runs = _runs(fake, name)
            assert len(runs) == 1 and runs[0]["status"] == "completed", runs
            with fake.lock:
                comments = [c for c in fake.state.review_comments if c["repo"] == name]
            assert len(comments) == 1


# --- in-process: the reaper's limit, its claim, and retention ---------------------------------
@pytest.fixture
def bound(tmp_path: Path) -> Iterator[tuple[Any, FakeGitHub, str]]:
    """Settings bound in this process: SQLite, Redis under a private prefix, no worker."""
    from bot.web import create_app

    key_path, public = make_key(tmp_path)
    prefix = f"numcheck-outbox-{secrets.token_hex(4)}:"
    redis_url = ensure_redis()
    with FakeGitHub(APP_ID, public) as fake:
        settings = from_env(
            app_env(
                key_path=key_path,
                api_url=fake.api_url,
                database_url=f"sqlite:///{tmp_path / 'n.db'}",
                broker_url=redis_url,
                prefix=prefix,
                NUMCHECK_REAP_AFTER="60",
                NUMCHECK_RETENTION_DAYS="30",
            )
        )
        create_app(settings)  # binds the settings, migrates the database
        try:
            yield settings, fake, prefix
        finally:
            clean_redis(redis_url, prefix)


def test_the_reaper_takes_a_row_once_per_deadline_and_gives_up_visibly(
    bound: tuple[Any, FakeGitHub, str], git_repo: GitRepoFactory
) -> None:
    import redis

    from bot.analyses import MAX_DELIVERIES
    from bot.scheduling import reap

    settings, fake, prefix = bound
    repo = _repo(git_repo, fake, "octo/given-up", range(3, 4))
    analysis_id = _insert_lost(
        settings.database_url, "octo/given-up", 3, repo.sha("feature"), repo.sha("main")
    )
    queue = redis.Redis.from_url(settings.broker_url)
    now = datetime.now(UTC)
    assert reap(settings, now) == []  # not stuck yet
    for attempt in range(1, MAX_DELIVERIES + 1):
        now += timedelta(seconds=61)
        assert reap(settings, now) == [f"analysis {analysis_id}: enqueued again from queued"]
        assert reap(settings, now) == []  # a second reaper in the same round takes nothing
        assert queue.llen(f"{prefix}static") == attempt
        message = json.loads(queue.lindex(f"{prefix}static", 0) or b"{}")
        assert message["headers"]["id"] == f"numcheck-analysis-{analysis_id}-static"
    now += timedelta(seconds=61)
    assert reap(settings, now) == [
        f"analysis {analysis_id}: failed after {MAX_DELIVERIES} re-enqueues"
    ]
    row = _row(settings.database_url, analysis_id)
    assert row is not None and row.status == "failed" and "enqueued 4 times" in row.error
    (run,) = _runs(fake, "octo/given-up")
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "never finished" in run["output"]["summary"]
    assert queue.llen(f"{prefix}static") == MAX_DELIVERIES
    now += timedelta(seconds=61)
    assert reap(settings, now) == []


def test_old_deliveries_and_finished_analyses_are_pruned(
    bound: tuple[Any, FakeGitHub, str],
) -> None:
    from bot.outbox import prune

    settings, _, _ = bound
    now = datetime.now(UTC)
    old, recent = now - timedelta(days=31), now - timedelta(days=29)
    engine = create_engine(settings.database_url)
    try:
        with Session(engine) as s:
            s.add_all(
                [
                    Delivery(id="old", event="ping", received_at=old),
                    Delivery(id="recent", event="ping", received_at=recent),
                ]
            )

            def analysis(status: str, when: datetime) -> Analysis:
                return Analysis(
                    installation_id=1,
                    repo="o/r",
                    pr_number=1,
                    head_sha="a" * 40,
                    status=status,
                    timings={},
                    publish_state={},
                    created_at=when,
                    updated_at=when,
                )

            gone = analysis("published", old)
            gone.findings.append(
                FindingRow(fingerprint="f", path="m.py", line=1, op="log", status="potential")
            )
            s.add_all(
                [
                    gone,
                    analysis("published", recent),
                    analysis("failed", old),
                    analysis("queued", old),
                    analysis("running", old),
                ]
            )
            s.commit()
        assert prune(settings, now) == (1, 2)
        assert prune(settings, now) == (0, 0)
        with Session(engine) as s:
            assert s.scalars(select(Delivery.id)).all() == ["recent"]
            assert sorted(s.scalars(select(Analysis.status))) == ["published", "queued", "running"]
            assert s.scalar(select(func.count()).select_from(FindingRow)) == 0
    finally:
        engine.dispose()


def test_outbox_settings_are_read_and_checked(tmp_path: Path) -> None:
    key_path, _ = make_key(tmp_path)
    env = app_env(
        key_path=key_path,
        api_url="http://127.0.0.1:1",
        database_url="sqlite:///x.db",
        broker_url="redis://127.0.0.1:6379/0",
    )
    defaults = from_env(env)
    assert defaults.reap_deadline == defaults.hard_time_limit + 240
    assert (defaults.reap_interval, defaults.retention_days) == (60.0, 90.0)
    tuned = from_env(
        {
            **env,
            "NUMCHECK_REAP_AFTER": "5",
            "NUMCHECK_REAP_INTERVAL": "1",
            "NUMCHECK_RETENTION_DAYS": "7",
        }
    )
    assert (tuned.reap_deadline, tuned.reap_interval, tuned.retention_days) == (5, 1, 7)
    with pytest.raises(SettingsError, match="NUMCHECK_RETENTION_DAYS"):
        from_env({**env, "NUMCHECK_RETENTION_DAYS": "-1"})
    with pytest.raises(SettingsError, match="NUMCHECK_REAP_AFTER"):
        from_env({**env, "NUMCHECK_REAP_AFTER": "soon"})


def test_the_embedded_broker_never_hands_out_a_half_written_message(tmp_path: Path) -> None:
    """A message appears in the queue folder only whole; a binding table written by one
    process survives another process declaring the same queue."""
    from kombu import Connection, Exchange, Queue

    from bot.broker import TRANSPORT

    folder = tmp_path / "broker"
    (folder / "control").mkdir(parents=True)
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }
    queue = Queue("static", Exchange("static"), "static")
    with (
        Connection("filesystem://", transport=TRANSPORT, transport_options=options) as one,
        Connection("filesystem://", transport=TRANSPORT, transport_options=options) as two,
    ):
        queue.bind(one.default_channel).declare()
        table = (folder / "control" / "static.exchange").read_text()
        queue.bind(two.default_channel).declare()
        assert (folder / "control" / "static.exchange").read_text() == table
        (folder / f".{secrets.token_hex(4)}.static.msg.part").write_bytes(b"")  # mid-write
        with one.Producer() as producer:
            producer.publish({"n": 1}, exchange="static", routing_key="static")
        assert not [p for p in folder.iterdir() if p.name.endswith(".part") and p.stat().st_size]
        got = two.SimpleQueue(queue).get(timeout=2)
        assert got.payload == {"n": 1}
        got.ack()
        assert re.fullmatch(
            r"\.[0-9a-f]+\.static\.msg\.part", next(p.name for p in folder.iterdir() if p.is_file())
        )


def _drain_while_publishing(folder: Path, transport: str, count: int) -> list[int]:
    """Publish `count` messages on a thread while another connection consumes; what arrived."""
    from kombu import Connection, Exchange, Queue

    (folder / "control").mkdir(parents=True)
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "control"),
        "store_processed": False,
        "polling_interval": 0.0,
    }
    queue = Queue("static", Exchange("static"), "static")
    got: list[int] = []
    with (
        Connection("filesystem://", transport=transport, transport_options=options) as one,
        Connection("filesystem://", transport=transport, transport_options=options) as two,
    ):
        queue.bind(one.default_channel).declare()

        def publish() -> None:
            with one.Producer() as producer:
                for i in range(count):
                    producer.publish(
                        {"i": i, "pad": "x" * 20000}, exchange="static", routing_key="static"
                    )

        publisher = threading.Thread(target=publish)
        publisher.start()
        consumer = two.SimpleQueue(queue)
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            try:
                message = consumer.get(timeout=0.2)
            except consumer.Empty:
                if not publisher.is_alive() and not any(folder.glob("*.msg")):
                    break
                continue
            except ValueError:  # kombu's own channel: a half-written file, read and gone
                continue
            got.append(message.payload["i"])
            message.ack()
        publisher.join()
    return got


def test_the_embedded_broker_loses_nothing_to_a_consumer_polling_mid_write(tmp_path: Path) -> None:
    """kombu's filesystem channel creates a message file before writing it: a worker polling
    at that moment takes the empty file and the message is gone (the lost first delivery of
    `numcheck serve`). Ours renames a whole file into place."""
    from bot.broker import TRANSPORT

    got = _drain_while_publishing(tmp_path / "ours", TRANSPORT, 400)
    assert sorted(got) == list(range(400))


def test_a_delivery_while_the_broker_is_down_is_acknowledged_and_enqueued_later(
    tmp_path: Path, git_repo: GitRepoFactory
) -> None:
    """The row is the record: with the broker unreachable the delivery is still answered 202
    (GitHub would not send it again), and the reaper enqueues it once the broker is back."""
    import redis
    from app_support import WebServer

    from bot.scheduling import reap
    from bot.web import create_app
    from bot.worker import bind_settings

    key_path, public = make_key(tmp_path)
    prefix = f"numcheck-outbox-{secrets.token_hex(4)}:"
    redis_url = ensure_redis()
    with FakeGitHub(APP_ID, public) as fake:
        repo = _repo(git_repo, fake, "octo/down", range(5, 6))
        env = app_env(
            key_path=key_path,
            api_url=fake.api_url,
            database_url=f"sqlite:///{tmp_path / 'n.db'}",
            broker_url="redis://127.0.0.1:1/0",
            prefix=prefix,
            NUMCHECK_REAP_AFTER="60",
        )
        down = from_env(env)
        try:
            with WebServer(create_app(down)) as web:
                status, body = deliver(
                    web.url,
                    "pull_request",
                    pull_payload(
                        "opened",
                        repo="octo/down",
                        number=5,
                        head=repo.sha("feature"),
                        base=repo.sha("main"),
                        installation=INSTALLATION,
                        api_url=fake.api_url,
                    ),
                )
            assert status == 202 and body["status"].startswith("queued analysis"), body
            analysis_id = int(body["status"].split()[-1])
            row = _row(down.database_url, analysis_id)
            assert row is not None and row.status == "queued"
            up = from_env({**env, "NUMCHECK_BROKER_URL": redis_url})
            bind_settings(up)
            assert reap(up) == []  # not yet past the deadline
            later = datetime.now(UTC) + timedelta(seconds=61)
            assert reap(up, later) == [f"analysis {analysis_id}: enqueued again from queued"]
            queue = redis.Redis.from_url(redis_url)
            message = json.loads(queue.lindex(f"{prefix}static", 0) or b"{}")
            assert message["headers"]["id"] == f"numcheck-analysis-{analysis_id}-static"
        finally:
            clean_redis(redis_url, prefix)


def _add_analysis(
    engine: Any, installation: int, status: str, number: int, started_at: Any = None
) -> Analysis:
    """An analysis row of PR `number` in the installation's own repository, committed."""
    with Session(engine, expire_on_commit=False) as s:
        row = Analysis(
            installation_id=installation,
            repo=f"o/r{installation}",
            pr_number=number,
            head_sha=f"{number:040d}",
            status=status,
            started_at=started_at,
            timings={},
            publish_state={},
        )
        s.add(row)
        s.commit()
        return row


def test_an_installation_at_its_share_waits_while_another_is_queued(
    bound: tuple[Any, FakeGitHub, str],
) -> None:
    """Fairness between installations (bot/scheduling.py defer_for_fairness): a noisy
    installation with one analysis running waits when a quiet one has work queued, and uses
    every worker when it is alone."""
    from dataclasses import replace

    from bot.scheduling import defer_for_fairness

    settings, _, _ = bound
    engine = create_engine(settings.database_url)

    def add(installation: int, status: str, number: int) -> Analysis:
        return _add_analysis(engine, installation, status, number)

    try:
        add(7, "running", 1)
        noisy_next = add(7, "queued", 2)
        assert not defer_for_fairness(settings, noisy_next)  # alone: no one to make room for
        add(8, "queued", 1)
        assert defer_for_fairness(settings, noisy_next)
        quiet = add(8, "queued", 2)
        assert not defer_for_fairness(settings, quiet)  # the quiet one has nothing running
        assert not defer_for_fairness(replace(settings, installation_concurrency=2), noisy_next)
        assert not defer_for_fairness(replace(settings, installation_concurrency=0), noisy_next)
    finally:
        engine.dispose()


def test_installations_take_turns_least_recently_served_first(
    bound: tuple[Any, FakeGitHub, str],
) -> None:
    """With nothing of its own running, an installation served a moment ago still waits for
    one that is waiting and was served longer ago (or never): a quiet installation's PR, far
    back in the broker's queue behind a noisy one's, goes next. The least recently served
    never waits, so no installation starves."""
    from datetime import UTC, datetime, timedelta

    from bot.scheduling import defer_for_fairness

    settings, _, _ = bound
    engine = create_engine(settings.database_url)
    now = datetime.now(UTC)

    def add(installation: int, status: str, number: int, started: float | None = None) -> Analysis:
        when = None if started is None else now - timedelta(seconds=started)
        return _add_analysis(engine, installation, status, number, started_at=when)

    def started(row: Analysis) -> datetime | None:
        with Session(engine) as s:
            fresh = s.get(Analysis, row.id)
            return fresh.started_at if fresh is not None else None

    try:
        add(17, "published", 1, started=10)  # noisy: served 10 s ago, nothing running now
        add(18, "published", 1, started=60)  # served a minute ago
        noisy_next = add(17, "queued", 2)
        assert not defer_for_fairness(settings, noisy_next)  # no one else waits
        noisy_third = add(17, "queued", 3)
        quiet = add(18, "queued", 2)
        never = add(19, "queued", 1)
        assert defer_for_fairness(settings, noisy_third)  # its own is running, others wait
        assert started(noisy_third) is None  # waiting is not being served
        assert defer_for_fairness(settings, quiet)  # 19 was never served: it goes first
        assert not defer_for_fairness(settings, never)
        assert started(never) is not None  # taken up: stamped in the same decision
        assert not defer_for_fairness(settings, quiet)  # now 18 is the least recently served
        with Session(engine) as s:
            for row in (noisy_next, never, quiet):
                s.get(Analysis, row.id).status = "published"  # type: ignore[union-attr]
            s.commit()
        assert not defer_for_fairness(settings, noisy_third)  # nobody else waits any more
        # A waiting installation whose message was lost holds others back two minutes at most
        stuck = add(20, "queued", 1)
        fresh, old = add(17, "queued", 4), add(17, "queued", 5)
        with Session(engine) as s:
            s.get(Analysis, noisy_third.id).status = "published"  # type: ignore[union-attr]
            row = s.get(Analysis, old.id)
            assert row is not None
            row.created_at = now - timedelta(minutes=3)
            s.commit()
            s.refresh(row)
            s.expunge(row)
            old = row
        assert defer_for_fairness(settings, fresh) and stuck.started_at is None
        assert not defer_for_fairness(settings, old)
    finally:
        engine.dispose()


def test_a_stopped_analysis_is_never_brought_back_by_its_worker(
    bound: tuple[Any, FakeGitHub, str],
) -> None:
    """A close or a newer push marks the row cancelled or superseded while a worker still runs
    it; that worker's later `running`, `analysed` or `published` must not overwrite it (seen
    under load: a re-run cancelled by a close was published anyway)."""
    from bot.analyses import still_wanted, update_analysis
    from bot.scheduling import cancel_pull

    settings, _, _ = bound
    analysis_id = _insert_lost(settings.database_url, "octo/race", 5, "a" * 40, "b" * 40)
    row = _row(settings.database_url, analysis_id)
    assert row is not None and still_wanted(row)  # the worker looked: still wanted
    assert cancel_pull(settings, "octo/race", 5) == "cancelled 1 analysis(es)"
    for status in ("running", "analysed", "published"):
        assert update_analysis(analysis_id, status=status, error="late") is False
    after = _row(settings.database_url, analysis_id)
    assert after is not None and after.status == "cancelled" and after.error != "late"
    assert update_analysis(analysis_id, status="superseded") is True  # stopped either way
