"""`python -m bench.app --scale`: the App as production runs it, under many installations.

What runs, all real except GitHub:
- the web: docker/compose.yml's own gunicorn command (threaded workers);
- Celery workers per queue on the local Redis: `--static-workers` on `static` and
  `--dynamic-workers` on `dynamic` (the PRs are static-only; the dynamic workers idle, as a
  CPU host's would while GPU hosts take that queue);
- PostgreSQL (a fresh database);
- the GitHub test server (tests/github_fake.py) with a secondary rate limit on
  content-creating calls: 403 with Retry-After past `--limit` calls a minute per installation.

The load: `--installations` installations with `--pulls` PRs each (one repository each, every
PR adding a few risky ops). Installation 1 is noisy: its PRs are delivered first, all at once;
the others' follow as one concurrent burst.

It prints, and writes to bench/out/app-scale.json:
- acknowledgement p50/p99 over every delivery, as the senders saw it;
- delivery to completed check run, p50/p95;
- fairness: for each quiet PR, how many of the noisy installation's PRs completed before it,
  and, for each quiet installation, how many a worker took up after its first PR was
  acknowledged and before its first turn (queue-jumping; the noisy PRs already running when
  it arrived are not counted);
- lost (no completed check run, or no review, by the deadline) and duplicated reviews;
- the secondary-limit 403s sent, and calls that came before the Retry-After they were given;
- CPU seconds by component during the load, and the median of each stage a static worker
  timed (what saturates first: docs/scaling.md).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from app_support import (
    APP_ID,
    ComposeWeb,
    Worker,
    app_env,
    clean_redis,
    deliver,
    ensure_redis,
    make_key,
    postgres_database,
    pull_payload,
)
from conftest import GitRepo
from github_fake import FakeGitHub, FakePull

from bench.measure import percentile, process_cpu

RISKY = (
    "import torch\n\n\ndef f{i}(x, y):\n    a = torch.log(x)\n    b = x / y.sum()\n"
    "    return a + b + torch.sqrt(y)\n"
)


def add_parser_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--scale")
    group.add_argument("--installations", type=int, default=20)
    group.add_argument("--pulls", type=int, default=10, help="PRs per installation")
    group.add_argument("--static-workers", type=int, default=2)
    group.add_argument("--dynamic-workers", type=int, default=2)
    group.add_argument(
        "--limit",
        type=int,
        default=80,
        help="content-creating calls a minute per installation before a 403",
    )
    group.add_argument(
        "--deadline",
        type=float,
        default=900.0,
        help="seconds to wait for every check run and review",
    )


def run(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="numcheck-bench-scale-"))
    key_path, public = make_key(tmp)
    prefix = f"numcheck-scale-{secrets.token_hex(4)}:"
    broker = ensure_redis()
    workers: list[Worker] = []
    with FakeGitHub(APP_ID, public) as fake, postgres_database() as database:
        fake.secondary_limit = (args.limit, 60.0)
        pulls = _repositories(fake, tmp, args)
        env = app_env(
            key_path=key_path,
            api_url=fake.api_url,
            database_url=database,
            broker_url=broker,
            prefix=prefix,
            NUMCHECK_WORKSPACE_ROOT=str(tmp / "workspaces"),
        )
        try:
            with ComposeWeb(env, tmp / "web.log", tmp) as web:
                for i in range(args.static_workers):
                    workers.append(Worker(env, tmp / f"static-{i}.log", "static").start())
                for i in range(args.dynamic_workers):
                    workers.append(Worker(env, tmp / f"dynamic-{i}.log", "dynamic").start())
                roots = {"web": _pid(web.proc)}
                for i, worker in enumerate(workers):
                    kind = "static workers" if i < args.static_workers else "dynamic workers"
                    roots[f"{kind}#{i}"] = _pid(worker.proc)
                before = _cpu_by_component(roots)
                report = _load(web.url, fake, pulls, args)
                after = _cpu_by_component(roots)
                report["cpu_seconds"] = {
                    k: round(after.get(k, 0.0) - before.get(k, 0.0), 1) for k in after
                }
                print(
                    f"CPU seconds during the load ({report['wall_s']} s wall x "
                    f"{os.cpu_count()} cores): "
                    + ", ".join(f"{k} {v}" for k, v in report["cpu_seconds"].items())
                )
                report["stage_medians_s"] = _stage_medians(database)
                print(
                    "per PR on a static worker, median s: "
                    + ", ".join(f"{k} {v}" for k, v in report["stage_medians_s"].items())
                )
        finally:
            for worker in workers:
                worker.stop()
            clean_redis(broker, prefix)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return report


def _pid(proc: Any) -> int:
    return int(proc.pid) if proc is not None else -1


def _cpu_by_component(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far (own and reaped children's, from /proc), by component: each
    of `roots`' process trees (a `#n` suffix is summed with its kind), PostgreSQL, Redis, and
    this process (the GitHub stand-in with its git http-backend children, and the load)."""
    stats = process_cpu()
    owner = {pid: name.split("#")[0] for name, pid in roots.items()}
    owner[os.getpid()] = "GitHub stand-in and load"

    def component(pid: int) -> str | None:
        seen = 0
        while pid in stats and seen < 64:
            if pid in owner:
                return owner[pid]
            comm = stats[pid][0]
            if comm.startswith("postgres"):
                return "PostgreSQL"
            if comm.startswith("redis-server"):
                return "Redis"
            pid, seen = stats[pid][1], seen + 1
        return None

    # A live child's time is its own; an exited one's moved into its parent's cutime/cstime
    totals: dict[str, float] = {}
    for pid, (_comm, _ppid, cpu) in stats.items():
        name = component(pid)
        if name is not None:
            totals[name] = totals.get(name, 0.0) + cpu
    return totals


def _stage_medians(database: str) -> dict[str, float]:
    """Median seconds of each stage the workers timed (bot/jobs.py `timings`): where a PR's
    time on a static worker goes, to say what saturates first."""
    from sqlalchemy import create_engine, text

    engine = create_engine(database)
    try:
        with engine.connect() as conn:
            rows = [r[0] or {} for r in conn.execute(text("SELECT timings FROM analyses"))]
    finally:
        engine.dispose()
    stages: dict[str, list[float]] = {}
    for timings in rows:
        if isinstance(timings, str):
            timings = json.loads(timings)
        for key, value in timings.items():
            if isinstance(value, int | float):
                stages.setdefault(key, []).append(float(value))
    return {k: round(statistics.median(v), 3) for k, v in sorted(stages.items())}


def _repositories(fake: FakeGitHub, tmp: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One repository per installation, `--pulls` PR branches in each."""
    pulls: list[dict[str, Any]] = []
    for inst in range(1, args.installations + 1):
        name = f"scale/repo{inst}"
        repo = GitRepo(tmp / "repos" / f"repo{inst}")
        repo.commit(
            {
                ".numcheck.toml": "dynamic = false\n",  # unique commits per repository
                "pkg/__init__.py": f'"""installation {inst}"""\n',
            },
            "base",
        )
        base = repo.sha("main")
        for number in range(1, args.pulls + 1):
            repo.checkout("main")
            repo.checkout(f"pr{number}", create=True)
            head = repo.commit({f"pkg/m{number}.py": RISKY.format(i=number)}, f"pr {number}")
            fake.add_pull(FakePull(name, number, "main", f"pr{number}"))
            pulls.append(
                {"repo": name, "number": number, "installation": inst, "head": head, "base": base}
            )
        fake.add_repo(name, repo.root)
    return pulls


def _load(
    url: str, fake: FakeGitHub, pulls: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    sent: dict[str, float] = {}
    acked: dict[str, float] = {}  # the 202 came back: the analysis row is committed
    begun: dict[str, float] = {}  # first seen with a check run: a worker took it up
    done: dict[str, float] = {}
    stop = threading.Event()

    def watch() -> None:  # the moment each head's check run is seen opened, and completed
        while not stop.is_set():
            now = time.perf_counter()
            with fake.lock:
                for r in fake.state.check_runs:
                    begun.setdefault(r["head_sha"], now)
                    if r["status"] == "completed":
                        done.setdefault(r["head_sha"], now)
            time.sleep(0.1)

    def one(pull: dict[str, Any]) -> float:
        body = json.dumps(
            pull_payload(
                "opened",
                repo=pull["repo"],
                number=pull["number"],
                head=pull["head"],
                base=pull["base"],
                installation=pull["installation"],
                api_url=fake.api_url,
            )
        ).encode()
        started = time.perf_counter()
        sent[pull["head"]] = started
        status, _ = deliver(url, "pull_request", body)
        assert status == 202, status
        acked[pull["head"]] = time.perf_counter()
        return (acked[pull["head"]] - started) * 1000

    assert len({p["head"] for p in pulls}) == len(pulls), "two PRs share a head commit"
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    noisy = [p for p in pulls if p["installation"] == 1]
    quiet = [p for p in pulls if p["installation"] != 1]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=200) as pool:
        ack_ms = list(pool.map(one, noisy))
        ack_ms += list(pool.map(one, quiet))
    deadline = time.monotonic() + args.deadline
    while time.monotonic() < deadline and len(done) < len(pulls):
        time.sleep(0.5)
    time.sleep(2.0)  # reviews follow the check run
    stop.set()
    wall = time.perf_counter() - started

    with fake.lock:
        reviews: dict[str, int] = {}
        for review in fake.state.reviews:
            reviews[review["commit_id"]] = reviews.get(review["commit_id"], 0) + 1
    lost = [p for p in pulls if p["head"] not in done or p["head"] not in reviews]
    duplicated = [h for h, n in reviews.items() if n > 1]
    latency = [done[p["head"]] - sent[p["head"]] for p in pulls if p["head"] in done]
    noisy_done = sorted(done[p["head"]] for p in noisy if p["head"] in done)
    behind = [sum(1 for t in noisy_done if t < done[p["head"]]) for p in quiet if p["head"] in done]
    first_of_each: dict[int, float] = {}  # each quiet installation's first finished PR
    for p in quiet:
        if p["head"] in done:
            first_of_each[p["installation"]] = min(
                first_of_each.get(p["installation"], float("inf")), done[p["head"]]
            )
    first_behind = [sum(1 for t in noisy_done if t < first) for first in first_of_each.values()]
    # Queue-jumping: noisy PRs a worker took up after a quiet PR was acknowledged (its analysis
    # recorded) and before that quiet PR was taken up; those already running are not counted
    noisy_begun = [begun[p["head"]] for p in noisy if p["head"] in begun]

    def taken_ahead(pull: dict[str, Any]) -> int:
        return sum(1 for t in noisy_begun if acked[pull["head"]] < t < begun[pull["head"]])

    ahead = [taken_ahead(p) for p in quiet if p["head"] in begun]
    # Each quiet installation's wait for its first turn: from its first acknowledged PR to the
    # first of its PRs a worker took up (which may be another of its PRs)
    turns: dict[int, tuple[float, float]] = {}
    for p in quiet:
        if p["head"] in begun:
            was = turns.get(p["installation"], (float("inf"), float("inf")))
            turns[p["installation"]] = (
                min(was[0], acked[p["head"]]),
                min(was[1], begun[p["head"]]),
            )
    first_ahead = [sum(1 for t in noisy_begun if a < t < b) for a, b in turns.values()]
    report = {
        "installations": args.installations,
        "pulls": len(pulls),
        "static_workers": args.static_workers,
        "dynamic_workers": args.dynamic_workers,
        "web": "docker/compose.yml web command",
        "secondary_limit_per_minute": args.limit,
        "ack_p50_ms": round(statistics.median(ack_ms), 1),
        "ack_p99_ms": round(percentile(ack_ms, 99), 1),
        "check_run_p50_s": round(statistics.median(latency), 2) if latency else None,
        "check_run_p95_s": round(percentile(latency, 95), 2) if latency else None,
        "wall_s": round(wall, 1),
        "pulls_per_minute": round(len(done) / wall * 60, 1),
        "quiet_behind_noisy_median": statistics.median(behind) if behind else None,
        "quiet_behind_noisy_max": max(behind) if behind else None,
        "quiet_first_behind_noisy_median": statistics.median(first_behind)
        if first_behind
        else None,
        "quiet_first_behind_noisy_max": max(first_behind) if first_behind else None,
        "noisy_taken_up_ahead_median": statistics.median(ahead) if ahead else None,
        "noisy_taken_up_ahead_max": max(ahead) if ahead else None,
        "first_noisy_taken_up_ahead_median": statistics.median(first_ahead)
        if first_ahead
        else None,
        "first_noisy_taken_up_ahead_max": max(first_ahead) if first_ahead else None,
        "lost": len(lost),
        "per_pull": [
            {
                "installation": p["installation"],
                "number": p["number"],
                **{
                    name: round(times[p["head"]] - started, 3)
                    for name, times in (
                        ("sent", sent),
                        ("acked", acked),
                        ("taken_up", begun),
                        ("completed", done),
                    )
                    if p["head"] in times
                },
            }
            for p in pulls
        ],
        "duplicated_reviews": len(duplicated),
        "rate_limited_403": fake.limited,
        "calls_before_retry_after": fake.early,
    }
    print(
        f"{len(pulls)} PRs from {args.installations} installations; web: compose's gunicorn; "
        f"workers: {args.static_workers} static, {args.dynamic_workers} dynamic"
    )
    print(
        f"acknowledgement: p50 {report['ack_p50_ms']} ms, p99 {report['ack_p99_ms']} ms  "
        "(target p99 < 100 ms)"
    )
    print(
        f"delivery to completed check run: p50 {report['check_run_p50_s']} s, p95 "
        f"{report['check_run_p95_s']} s  (target p95 < 10 s); "
        f"{report['pulls_per_minute']} PRs/min"
    )
    print(
        f"fairness: each quiet installation's first PR finished after a median of "
        f"{report['quiet_first_behind_noisy_median']} (max "
        f"{report['quiet_first_behind_noisy_max']}) of the noisy installation's {len(noisy)} "
        f"(target <= 1); over all quiet PRs: median {report['quiet_behind_noisy_median']}"
    )
    print(
        f"fairness: noisy PRs taken up after a quiet installation's first PR was acknowledged "
        f"and before its first turn (any of its PRs taken up): median "
        f"{report['first_noisy_taken_up_ahead_median']}, max "
        f"{report['first_noisy_taken_up_ahead_max']} (target <= 1); over all quiet PRs (each "
        f"installation has {args.pulls}, so later ones take turns with the noisy one's): "
        f"median {report['noisy_taken_up_ahead_median']}, max "
        f"{report['noisy_taken_up_ahead_max']}"
    )
    print(
        f"lost: {report['lost']}, duplicated reviews: {report['duplicated_reviews']}; "
        f"secondary-limit 403s: {fake.limited}, calls before their Retry-After: {fake.early}"
    )
    return report
