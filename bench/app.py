"""The GitHub App under load: webhook acknowledgement latency, and delivery-to-review time.

    python -m bench.app                          # 200 concurrent deliveries, a 10-finding PR
    python -m bench.app --deliveries 500 --concurrency 200 --dynamic
    python -m bench.app --scale                  # production web, worker pools, 20 installations
    python -m bench.app --ack                    # the production web alone, bursts of 200

It starts what the end-to-end tests start: the GitHub test server (tests/github_fake.py), the
Flask app on a threaded HTTP server (one process, as `numcheck serve` runs it; production puts
gunicorn workers in front), a real Celery worker on the local Redis, SQLite (or
`--database-url`). Then:

1. acknowledgement: `--deliveries` signed `pull_request` deliveries (GitHub's own payload,
   each for its own PR), `--concurrency` at a time; each is verified, recorded, routed and
   enqueued before the answer. Prints p50/p90/p99/max of the answer time seen by the client.
2. end to end: one PR whose head adds 10 risky operations; the time from the POST to the
   completed check run and to the review with its 10 inline comments at the test server
   (static pass only unless `--dynamic`).

Writes bench/out/app.json.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from app_support import (  # noqa: E402
    APP_ID,
    WebServer,
    Worker,
    app_env,
    clean_redis,
    deliver,
    ensure_redis,
    make_key,
    pull_payload,
    wait_for,
)
from conftest import GitRepo  # noqa: E402
from github_fake import FakeGitHub, FakePull  # noqa: E402

from bench.measure import percentile  # noqa: E402

TEN_FINDINGS = "import torch\n\n\n" + "".join(
    f"def f{i}(x, y):\n    return {op}\n\n\n"
    for i, op in enumerate(
        [
            "torch.log(x)",
            "x / y.norm()",
            "torch.sqrt(x)",
            "torch.acos(x)",
            "torch.log(x.sum())",
            "torch.rsqrt(x)",
            "x / y.sum()",
            "torch.log2(y)",
            "torch.log10(x)",
            "torch.log1p(x)",
        ]
    )
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.app",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--deliveries", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument(
        "--dynamic", action="store_true", help="confirm the 10 findings by running the code"
    )
    parser.add_argument("--database-url", help="default: a SQLite file in a temp dir")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "app.json")
    parser.add_argument(
        "--scale",
        action="store_true",
        help="the production configuration under many installations (bench/app_scale.py)",
    )
    parser.add_argument(
        "--ack",
        action="store_true",
        help="the production web alone under bursts, against a baseline (bench/app_ack.py)",
    )
    from bench import app_ack, app_scale

    app_scale.add_parser_options(parser)
    app_ack.add_parser_options(parser)
    args = parser.parse_args(argv)
    if args.scale:
        app_scale.run(args, ROOT / "bench" / "out" / "app-scale.json")
        return 0
    if args.ack:
        app_ack.run(args, ROOT / "bench" / "out" / "app-ack.json")
        return 0

    from bot.settings import from_env
    from bot.web import create_app

    tmp = Path(tempfile.mkdtemp(prefix="numcheck-bench-app-"))
    key_path, public = make_key(tmp)
    prefix = f"numcheck-bench-{secrets.token_hex(4)}:"
    report: dict[str, Any] = {}
    with FakeGitHub(APP_ID, public) as fake:
        env = app_env(
            key_path=key_path,
            api_url=fake.api_url,
            database_url=args.database_url or f"sqlite:///{tmp / 'numcheck.db'}",
            broker_url=ensure_redis(),
            prefix=prefix,
            NUMCHECK_WORKSPACE_ROOT=str(tmp / "workspaces"),
        )
        app = create_app(from_env(env))
        worker = Worker(env, tmp / "worker.log").start()
        try:
            with WebServer(app) as web:
                report["acknowledgement"] = _acknowledgement(web.url, fake, args)
                report["end_to_end"] = _end_to_end(web.url, fake, tmp, worker, args)
        finally:
            worker.stop()
            clean_redis(ensure_redis(), prefix)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


def _acknowledgement(url: str, fake: FakeGitHub, args: argparse.Namespace) -> dict[str, Any]:
    payloads = [
        json.dumps(
            pull_payload(
                "synchronize",
                repo="bench/unknown",
                number=n,
                head=secrets.token_hex(20),
                base="b" * 40,
                installation=1,
                api_url=fake.api_url,
            )
        ).encode()
        for n in range(1, args.deliveries + 1)
    ]

    def one(body: bytes) -> tuple[int, float]:
        started = time.perf_counter()
        status, _ = deliver(url, "pull_request", body)
        return status, (time.perf_counter() - started) * 1000

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        answers = list(pool.map(one, payloads))
    wall = time.perf_counter() - started
    ms = [m for _, m in answers]
    statuses = sorted({s for s, _ in answers})
    result = {
        "deliveries": len(ms),
        "concurrency": args.concurrency,
        "statuses": statuses,
        "p50_ms": round(statistics.median(ms), 1),
        "p90_ms": round(percentile(ms, 90), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "max_ms": round(max(ms), 1),
        "deliveries_per_s": round(len(ms) / wall, 1),
    }
    print(
        f"acknowledgement: {len(ms)} deliveries, {args.concurrency} at a time: "
        f"p50 {result['p50_ms']} ms, p90 {result['p90_ms']} ms, p99 {result['p99_ms']} ms, "
        f"max {result['max_ms']} ms; {result['deliveries_per_s']}/s; statuses {statuses}"
    )
    return result


def _end_to_end(
    url: str, fake: FakeGitHub, tmp: Path, worker: Worker, args: argparse.Namespace
) -> dict[str, Any]:
    repo = GitRepo(tmp / "repo")
    config = (
        "dynamic = false\n"
        if not args.dynamic
        else ("dynamic = true\nharvest = false\nsearch_seconds = 2.0\n")
    )
    repo.commit(
        {".numcheck.toml": config, "model/__init__.py": "", "model/ops.py": "import torch\n"},
        "base",
    )
    repo.checkout("feature", create=True)
    head = repo.commit({"model/ops.py": TEN_FINDINGS}, "ten risky ops")
    fake.add_repo("bench/ten", repo.root)
    fake.add_pull(FakePull("bench/ten", 1, "main", "feature"))
    payload = pull_payload(
        "opened",
        repo="bench/ten",
        number=1,
        head=head,
        base=repo.sha("main"),
        installation=1,
        api_url=fake.api_url,
    )
    started = time.perf_counter()
    status, _ = deliver(url, "pull_request", payload)
    acked = time.perf_counter() - started

    def done() -> dict[str, Any] | None:
        with fake.lock:
            return next(
                (
                    r
                    for r in fake.state.check_runs
                    if r["head_sha"] == head and r["status"] == "completed"
                ),
                None,
            )

    run = wait_for(done, 600, "the check run", worker.log)
    checked = time.perf_counter() - started
    wait_for(lambda: any(r["commit_id"] == head for r in fake.state.reviews), 60, "the review")
    reviewed = time.perf_counter() - started
    comments = [c for c in fake.state.review_comments if c["repo"] == "bench/ten"]
    result = {
        "status": status,
        "findings": run["output"]["annotations_count"],
        "inline_comments": len(comments),
        "dynamic": args.dynamic,
        "ack_s": round(acked, 3),
        "check_run_completed_s": round(checked, 3),
        "review_posted_s": round(reviewed, 3),
    }
    print(
        f"end to end: {result['findings']} findings, {len(comments)} inline comments; "
        f"acknowledged in {acked * 1000:.0f} ms, review after {reviewed:.2f} s, check run "
        f"completed after {checked:.2f} s ({'static + dynamic' if args.dynamic else 'static'})"
    )
    return result


if __name__ == "__main__":
    raise SystemExit(main())
