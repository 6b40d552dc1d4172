"""Helpers for the App's tests: real services (Redis, PostgreSQL), an App key pair, the Flask
app on a real HTTP server, a real Celery worker process, signed deliveries built from GitHub's
own payload examples (tests/fixtures/webhooks)."""

from __future__ import annotations

import copy
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from werkzeug.serving import make_server

from bot.webhooks import signature

ROOT = Path(__file__).resolve().parent.parent
WEBHOOKS = ROOT / "tests" / "fixtures" / "webhooks"
APP_ID = 424242
SECRET = "It's a Secret to Everybody"
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _wait_port(host: str, port: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _port_open(host, port):
            return True
        time.sleep(0.2)
    return False


def ensure_redis() -> str:
    """Redis on 127.0.0.1:6379, started the way the machine starts it when it is down."""
    if not _port_open(REDIS_HOST, REDIS_PORT):
        if shutil.which("redis-server") is None:
            raise RuntimeError("Redis is down and redis-server is not installed")
        Path("/var/lib/redis").mkdir(parents=True, exist_ok=True)
        Path("/var/log/redis").mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "-::1",
                "--port",
                str(REDIS_PORT),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                "/var/lib/redis",
                "--logfile",
                "/var/log/redis/ci.log",
            ],
            check=True,
        )
        if not _wait_port(REDIS_HOST, REDIS_PORT, 15):
            raise RuntimeError("Redis did not start on 127.0.0.1:6379")
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/0"


def clean_redis(url: str, prefix: str) -> None:
    """Remove the keys a test run left under its prefix (queues, bindings, unacked)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
    finally:
        client.close()


def ensure_postgres() -> None:
    if _port_open("127.0.0.1", 5432):
        return
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    if not versions:
        raise RuntimeError("PostgreSQL is down and no cluster is configured")
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "start"], check=True
    )
    if not _wait_port("127.0.0.1", 5432, 30):
        raise RuntimeError("PostgreSQL did not start on 127.0.0.1:5432")


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh database for one test module, dropped afterwards."""
    import psycopg

    ensure_postgres()
    name = f"numcheck_test_{secrets.token_hex(6)}"
    with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        from bot.db import engine_for

        engine_for.cache_clear()
        with psycopg.connect(
            "host=127.0.0.1 user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_key(where: Path) -> tuple[Path, str]:
    """(private key path, public key PEM) for a test App."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = where / "app.pem"
    path.write_bytes(pem)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return path, public.decode("ascii")


def app_env(
    *,
    key_path: Path,
    api_url: str,
    database_url: str,
    broker_url: str,
    prefix: str = "",
    **extra: str,
) -> dict[str, str]:
    env = {
        "NUMCHECK_APP_ID": str(APP_ID),
        "NUMCHECK_PRIVATE_KEY": str(key_path),
        "NUMCHECK_WEBHOOK_SECRET": SECRET,
        "NUMCHECK_BROKER_URL": broker_url,
        "NUMCHECK_DATABASE_URL": database_url,
        "NUMCHECK_GITHUB_API_URL": api_url,
        "NUMCHECK_WRITE_INTERVAL": "0",
        "NUMCHECK_RETRY_BASE_SECONDS": "0.3",
    }
    if prefix:
        env["NUMCHECK_BROKER_PREFIX"] = prefix
    env.update(extra)
    return env


class WebServer:
    """The Flask app on a real (threaded werkzeug) HTTP server."""

    def __init__(self, app: Any) -> None:
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> WebServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()


class Worker:
    """`celery worker` in a subprocess, on the queues the App uses."""

    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        queues: str = "static,dynamic",
        concurrency: int = 1,
    ) -> None:
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.queues, self.concurrency = queues, concurrency
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> Worker:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "bot.tasks:celery_app",
                "worker",
                "-Q",
                self.queues,
                "-c",
                str(self.concurrency),
                "--without-gossip",
                "--without-mingle",
                "-l",
                "info",
                "-n",
                f"test-{secrets.token_hex(4)}@%h",
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready." in self.log():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"the worker exited:\n{self.log()[-4000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"the worker did not start:\n{self.log()[-4000:]}")

    def log(self) -> str:
        return (
            self.log_path.read_text(encoding="utf-8", errors="replace")
            if self.log_path.exists()
            else ""
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()


def load_payload(relative: str) -> dict[str, Any]:
    return json.loads((WEBHOOKS / relative).read_text(encoding="utf-8"))


def pull_payload(
    action: str,
    *,
    repo: str,
    number: int,
    head: str,
    base: str,
    installation: int,
    api_url: str,
    draft: bool = False,
) -> dict[str, Any]:
    """GitHub's own `pull_request` example, pointed at the test's repository and commits."""
    name = {
        "synchronize": "synchronize.payload.json",
        "opened": "opened.payload.json",
        "closed": "closed.payload.json",
    }[action]
    payload = copy.deepcopy(load_payload(f"pull_request/{name}"))
    retarget(payload, repo, api_url)
    payload["action"] = action
    payload["number"] = number
    payload["installation"] = {"id": installation, "node_id": "MDIzOkludGVncmF0aW9uMQ=="}
    pr = payload["pull_request"]
    pr["number"], pr["draft"] = number, draft
    pr["state"] = "closed" if action == "closed" else "open"
    pr["head"]["sha"], pr["base"]["sha"] = head, base
    pr["head"]["ref"], pr["base"]["ref"] = "feature", "main"
    if action == "synchronize":
        payload["after"] = head
    return payload


def comment_payload(
    body: str,
    *,
    repo: str,
    number: int,
    installation: int,
    api_url: str,
    login: str = "Codertocat",
    association: str = "OWNER",
) -> dict[str, Any]:
    """GitHub's issue_comment example, extended into a comment on a PR (README's recipe)."""
    payload = copy.deepcopy(load_payload("issue_comment/created.with-installation.payload.json"))
    retarget(payload, repo, api_url)
    payload["installation"]["id"] = installation
    issue = payload["issue"]
    issue["number"] = number
    issue["pull_request"] = {
        "url": f"{api_url}/repos/{repo}/pulls/{number}",
        "html_url": f"https://github.com/{repo}/pull/{number}",
        "diff_url": f"https://github.com/{repo}/pull/{number}.diff",
        "patch_url": f"https://github.com/{repo}/pull/{number}.patch",
        "merged_at": None,
    }
    comment = payload["comment"]
    comment["id"] = int(secrets.randbelow(10**9))
    comment["body"] = body
    comment["author_association"] = association
    comment["user"]["login"] = login
    payload["sender"]["login"] = login
    return payload


def retarget(payload: dict[str, Any], repo: str, api_url: str) -> None:
    """Point every repository reference of an example payload at `repo`."""
    owner, name = repo.split("/")

    def fix(obj: Any) -> None:
        if isinstance(obj, dict):
            if "full_name" in obj and "owner" in obj:
                obj["full_name"], obj["name"] = repo, name
                obj["owner"]["login"] = owner
                obj["url"] = f"{api_url}/repos/{repo}"
                obj["clone_url"] = f"{api_url}/{repo}.git"
            for value in obj.values():
                fix(value)
        elif isinstance(obj, list):
            for value in obj:
                fix(value)

    fix(payload)


def deliver(
    url: str,
    event: str,
    payload: dict[str, Any] | bytes,
    *,
    delivery: str | None = None,
    secret: str = SECRET,
    sign: bool = True,
    signature_header: str | None = None,
) -> tuple[int, dict[str, Any]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or secrets.token_hex(16),
        "User-Agent": "GitHub-Hookshot/test",
    }
    if signature_header is not None:
        headers["X-Hub-Signature-256"] = signature_header
    elif sign:
        headers["X-Hub-Signature-256"] = signature(secret.encode(), body)
    request = urllib.request.Request(f"{url}/webhook", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def wait_for(
    condition: Callable[[], Any],
    timeout: float = 60,
    what: str = "condition",
    on_fail: Callable[[], str] | None = None,
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}" + (f"\n{on_fail()}" if on_fail else ""))


COMPOSE = ROOT / "docker" / "compose.yml"


def compose_web_command(port: int, app: str | None = None) -> list[str]:
    """docker/compose.yml's web command, bound to a local port, run by this interpreter: the
    production web configuration, tested and measured as it ships. `app` serves another WSGI
    app under the same server settings (a benchmark's baseline)."""
    import yaml

    command = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["web"]["command"]
    assert command[0] == "gunicorn" and command[-1] == "bot.web:create_app()"
    at = command.index("--bind")
    command = [*command[: at + 1], f"127.0.0.1:{port}", *command[at + 2 :]]
    if app is not None:
        command[-1] = app
    return [sys.executable, "-m", "gunicorn", *command[1:]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ComposeWeb:
    """The compose file's web command in a subprocess on a free local port, answering
    `/healthz` before `with` returns; stopped (terminated, then killed) on exit."""

    def __init__(
        self, env: dict[str, str], log_path: Path, cwd: Path, app: str | None = None
    ) -> None:
        self.env, self.log_path, self.cwd, self.app = {**os.environ, **env}, log_path, cwd, app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ComposeWeb:
        import urllib.request

        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                compose_web_command(self.port, self.app),
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=5):
                    return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(
                        "the web did not answer /healthz within 60 s:\n"
                        + self.log_path.read_text(errors="replace")[-4000:]
                    ) from None
                time.sleep(0.3)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
