"""The web's acknowledgement of a burst, measured on the web alone.

    python -m bench.app --ack                     # 200 deliveries at once, 5 rounds
    python -m bench.app --ack --deliveries 500 --concurrency 500 --rounds 3

The production web (docker/compose.yml's gunicorn command, as tests/app_support.ComposeWeb
runs it) on PostgreSQL and Redis, with no worker running: each answer is the web's whole job
(verify, parse, commit the analysis and the delivery, publish the wake-up call), and nothing
else on the machine competes with it. `--scale` measures everything on one machine at once.

The sender is a process of its own: an asyncio client that opens `--concurrency` connections,
then writes every request at once (GitHub's own `pull_request` payload, signed beforehand,
each for a PR of its own) and times each from its write to the last byte of its answer.
200 urllib threads in one Python process, as `--scale` sends, would partly time their own
turns at the GIL.

Baseline, in the same run: the same gunicorn command serving a WSGI app that reads the body
and answers 202 (`floor_app`), the least any answer of this server configuration can take.
Each round prints its p50/p99/max; the summary is the median over rounds, and the ratio of the
web's p99 to the floor's. Also the web's CPU per delivery, from /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.measure import percentile, process_cpu

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
_LENGTH = re.compile(rb"\r\ncontent-length: *(\d+)", re.IGNORECASE)


def add_parser_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--ack")
    group.add_argument("--rounds", type=int, default=5, help="bursts, each of --deliveries")


def floor_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Read the body, answer 202 with a small JSON: what every answer costs this server."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    environ["wsgi.input"].read(length)
    body = b'{"status": "floor"}'
    start_response(
        "202 Accepted", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


def run(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    sys.path.insert(0, str(TESTS))
    from app_support import (
        ComposeWeb,
        app_env,
        clean_redis,
        ensure_redis,
        make_key,
        postgres_database,
    )

    tmp = Path(tempfile.mkdtemp(prefix="numcheck-bench-ack-"))
    key_path, _ = make_key(tmp)
    prefix = f"numcheck-ack-{secrets.token_hex(4)}:"
    broker = ensure_redis()
    report: dict[str, Any] = {"deliveries": args.deliveries, "concurrency": args.concurrency}
    with postgres_database() as database:
        env = app_env(
            key_path=key_path,
            api_url="http://127.0.0.1:9",  # nothing here calls GitHub
            database_url=database,
            broker_url=broker,
            prefix=prefix,
        )
        try:
            with ComposeWeb(env, tmp / "floor.log", ROOT, app="bench.app_ack:floor_app") as floor:
                report["floor"] = _rounds("floor", floor.url, args, tmp)
            with ComposeWeb(env, tmp / "web.log", ROOT) as web:
                assert web.proc is not None
                _burst(web.url, args, tmp, first_pr=10**6)  # both workers booted and warm
                before = _worker_cpu(web.proc.pid)
                report["web"] = _rounds("web", web.url, args, tmp)
                after = _worker_cpu(web.proc.pid)
                shares = [after[pid] - before.get(pid, 0.0) for pid in after]
                used = sum(shares)
                report["web_cpu_s_by_process"] = [round(x, 2) for x in shares]
            report["web_cpu_ms_per_delivery"] = round(
                used * 1000 / (args.deliveries * args.rounds), 2
            )
        finally:
            clean_redis(broker, prefix)
    web_p99, floor_p99 = report["web"]["p99_ms"], report["floor"]["p99_ms"]
    report["p99_over_floor"] = round(web_p99 / floor_p99, 2) if floor_p99 else None
    print(
        f"web (compose's gunicorn, PostgreSQL, Redis): p50 {report['web']['p50_ms']} ms, "
        f"p99 {web_p99} ms over {args.rounds} bursts of {args.deliveries} "
        f"(median of rounds; target p99 < 100 ms)\n"
        f"floor (the same server, an app that only answers): p50 "
        f"{report['floor']['p50_ms']} ms, p99 {floor_p99} ms; web p99 / floor p99 "
        f"{report['p99_over_floor']}x\n"
        f"web CPU per delivery: {report['web_cpu_ms_per_delivery']} ms (after a warm-up burst; "
        f"CPU s by process, master first: {report['web_cpu_s_by_process']})"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return report


def _worker_cpu(master: int) -> dict[int, float]:
    """CPU seconds of gunicorn's master and of each of its worker processes, by pid."""
    return {pid: cpu for pid, (_, parent, cpu) in process_cpu().items() if master in (pid, parent)}


def _rounds(name: str, url: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    rounds = []
    for n in range(args.rounds):
        ms, statuses = _burst(url, args, tmp, first_pr=1 + n * args.deliveries)
        if set(statuses) != {202}:
            raise SystemExit(f"{name}: answers other than 202: {sorted(set(statuses))}")
        row = {
            "p50_ms": round(statistics.median(ms), 1),
            "p99_ms": round(percentile(ms, 99), 1),
            "max_ms": round(max(ms), 1),
        }
        print(
            f"  {name} round {n + 1}: p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms, "
            f"max {row['max_ms']} ms"
        )
        rounds.append(row)
        time.sleep(1.0)
    return {
        "rounds": rounds,
        **{k: round(statistics.median(r[k] for r in rounds), 1) for k in rounds[0]},
    }


def _burst(
    url: str, args: argparse.Namespace, tmp: Path, first_pr: int
) -> tuple[list[float], list[int]]:
    """One burst from a sender process; (milliseconds, statuses) of each delivery."""
    requests = tmp / f"requests-{first_pr}.json"
    requests.write_text(json.dumps(_requests(url, args.deliveries, first_pr)))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.app_ack",
            "--send",
            url,
            str(requests),
            str(args.concurrency),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if proc.returncode != 0:
        raise SystemExit(f"the sender failed:\n{proc.stderr[-4000:]}")
    answers = json.loads(proc.stdout)
    return [a[1] for a in answers], [a[0] for a in answers]


def _requests(url: str, count: int, first_pr: int) -> list[str]:
    """Whole HTTP requests, signed: GitHub's `pull_request` payload for PRs first_pr..."""
    from app_support import SECRET, pull_payload

    from bot.webhooks import signature

    host = url.removeprefix("http://")
    out = []
    for number in range(first_pr, first_pr + count):
        body = json.dumps(
            pull_payload(
                "opened",
                repo="bench/ack",
                number=number,
                head=secrets.token_hex(20),
                base="b" * 40,
                installation=1 + number % 20,
                api_url="http://127.0.0.1:9",
            )
        )
        head = (
            f"POST /webhook HTTP/1.1\r\nHost: {host}\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body.encode())}\r\n"
            f"X-GitHub-Event: pull_request\r\nX-GitHub-Delivery: {secrets.token_hex(16)}\r\n"
            f"X-Hub-Signature-256: {signature(SECRET.encode(), body.encode())}\r\n"
            "Connection: close\r\n\r\n"
        )
        out.append(head + body)
    return out


async def _send(url: str, requests: list[bytes], concurrency: int) -> list[tuple[int, float]]:
    host, port = url.removeprefix("http://").split(":")
    answers: list[tuple[int, float]] = []
    for start in range(0, len(requests), concurrency):
        batch = requests[start : start + concurrency]
        connections = [await asyncio.open_connection(host, int(port)) for _ in batch]

        async def one(request: bytes, reader: Any, writer: Any) -> tuple[int, float]:
            started = time.perf_counter()
            writer.write(request)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = _LENGTH.search(head)
            await reader.readexactly(int(length.group(1)) if length else 0)
            ms = (time.perf_counter() - started) * 1000
            writer.close()
            return int(head.split(b" ", 2)[1]), ms

        answers += await asyncio.gather(
            *(one(q, r, w) for q, (r, w) in zip(batch, connections, strict=True))
        )
    return answers


def _sender(argv: list[str]) -> int:
    url, path, concurrency = argv[0], Path(argv[1]), int(argv[2])
    requests = [r.encode() for r in json.loads(path.read_text())]
    answers = asyncio.run(_send(url, requests, concurrency))
    print(json.dumps([[status, round(ms, 3)] for status, ms in answers]))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--send"]:
        raise SystemExit(_sender(sys.argv[2:]))
    raise SystemExit("run it as python -m bench.app --ack")
