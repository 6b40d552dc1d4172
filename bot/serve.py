"""`numcheck serve`: the App's web process and one worker in a single command, for trying the
App on one machine. No Redis and no database server: Celery runs on kombu's filesystem
transport (messages are files under the data directory) and persistence is a SQLite file beside
them. The queues are declared before the worker starts and before the port opens, and a
reaper thread re-enqueues analyses whose message was lost (bot/outbox.py). The App's own
settings (ID, private key, webhook secret) still come from the environment.

Production runs the web under gunicorn (`gunicorn 'bot.web:create_app()'`) and workers with
`celery -A bot.tasks worker -Q static` / `-Q dynamic` on Redis and PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from bot.settings import SettingsError, from_env


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "numcheck"


def embedded_defaults(data_dir: Path) -> dict[str, str]:
    broker = data_dir / "broker"
    (broker / "control").mkdir(parents=True, exist_ok=True)
    return {
        "NUMCHECK_BROKER_URL": "filesystem://",
        "NUMCHECK_BROKER_FOLDER": str(broker),
        "NUMCHECK_DATABASE_URL": f"sqlite:///{data_dir / 'numcheck.db'}",
        "NUMCHECK_WORKSPACE_ROOT": str(data_dir / "workspaces"),
    }


def serve(host: str, port: int, data_dir: Path | None = None) -> int:
    data_dir = (data_dir or default_data_dir()).resolve()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        defaults = embedded_defaults(data_dir)
        settings = from_env(defaults=defaults)
    except (SettingsError, OSError) as exc:
        print(f"numcheck serve: error: {exc}", file=sys.stderr)
        return 2
    from werkzeug.serving import make_server

    from bot.scheduling import start_reaper
    from bot.web import create_app
    from bot.worker import declare_queues

    app = create_app(settings)  # migrates the database before the worker starts
    try:
        # Before the worker and before the port opens: the first delivery's message is routed
        # to a queue that exists, whatever the worker is doing at that moment.
        declare_queues()
    except Exception as exc:  # noqa: BLE001 - a broker error is reported, not a traceback
        print(f"numcheck serve: error: cannot declare the queues: {exc}", file=sys.stderr)
        return 2
    env = {**os.environ, **{k: v for k, v in defaults.items() if not os.environ.get(k)}}
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "bot.tasks:celery_app",
            "worker",
            "-Q",
            "static,dynamic",
            "-c",
            "1",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "info",
            "-n",
            "numcheck-serve@%h",
        ],
        env=env,
    )
    server = make_server(host, port, app, threaded=True)
    reaper = start_reaper(settings)  # re-enqueues analyses whose message was lost

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(
        f"numcheck serve: listening on http://{host}:{server.server_port}/webhook "
        f"(data in {data_dir}; broker {settings.broker_url}; database "
        f"{settings.database_url})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        reaper.stop()
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    return 0
