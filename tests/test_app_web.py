"""The production web command survives slow clients (docker/compose.yml's `web` service).

Two connections that announce a body and send a byte every few seconds held both sync
gunicorn workers: `/healthz` and `/webhook` stopped answering for about 30 s at a time, while
GitHub gives up on a delivery after 10 s. This runs the compose file's own web command (only
the bind address changed) on real Redis and PostgreSQL, with slow clients attached.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from app_support import (
    ComposeWeb,
    app_env,
    ensure_redis,
    make_key,
    postgres_database,
)

SLOW_CLIENTS = 6


def _get(url: str, timeout: float) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as response:
        assert response.status == 200
    return time.perf_counter() - started


@pytest.fixture
def web(tmp_path: Path) -> Iterator[str]:
    key, _ = make_key(tmp_path)
    with postgres_database() as database:
        env = app_env(
            key_path=key,
            api_url="http://127.0.0.1:9",
            database_url=database,
            broker_url=ensure_redis(),
            prefix=f"numcheck-web-{tmp_path.name}-",
        )
        with ComposeWeb(env, tmp_path / "gunicorn.log", tmp_path) as server:
            yield server.url


def _trickle(port: int, stop: threading.Event) -> None:
    """A webhook delivery that announces 1 KB and sends one byte every 2 s."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"X-GitHub-Event: ping\r\nContent-Length: 1000\r\n\r\n"
        )
        while not stop.wait(2.0):
            try:
                conn.sendall(b" ")
            except OSError:
                return


def test_slow_clients_do_not_stop_the_web(web: str) -> None:
    port = int(web.rsplit(":", 1)[1])
    stop = threading.Event()
    clients = [
        threading.Thread(target=_trickle, args=(port, stop), daemon=True)
        for _ in range(SLOW_CLIENTS)
    ]
    for client in clients:
        client.start()
    try:
        time.sleep(1.0)  # every slow client is connected and mid-body
        latencies = [_get(f"{web}/healthz", timeout=8) for _ in range(10)]
        request = urllib.request.Request(
            f"{web}/webhook",
            data=json.dumps({"zen": "hi"}).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "X-GitHub-Event": "ping"},
        )
        started = time.perf_counter()
        try:  # unsigned: refused, but answered at once rather than queued behind the slow ones
            urllib.request.urlopen(request, timeout=8)
        except urllib.error.HTTPError as refused:
            assert refused.code in (400, 401, 403)
        webhook_seconds = time.perf_counter() - started
    finally:
        stop.set()
    assert max(latencies) < 2.0, latencies
    assert webhook_seconds < 2.0


def test_the_ack_benchmark_times_every_delivery_against_its_floor(tmp_path: Path) -> None:
    """`python -m bench.app --ack`, small: every delivery of each burst is answered 202 by
    the compose web (a lost or refused one would end the run), the floor app runs under the
    same command, and the web's CPU is read from its own processes."""
    import argparse

    from bench import app_ack

    args = argparse.Namespace(deliveries=12, concurrency=12, rounds=2)
    report = app_ack.run(args, tmp_path / "ack.json")
    assert json.loads((tmp_path / "ack.json").read_text()) == report
    for side in ("web", "floor"):
        rounds = report[side]["rounds"]
        assert len(rounds) == 2
        assert all(0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"] for r in rounds)
    assert report["web_cpu_ms_per_delivery"] > 0
    assert len(report["web_cpu_s_by_process"]) == 3  # gunicorn's master and its 2 workers
    assert report["p99_over_floor"] == round(report["web"]["p99_ms"] / report["floor"]["p99_ms"], 2)
