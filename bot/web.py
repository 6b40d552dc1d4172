"""The web process: `POST /webhook`, `GET /healthz` and the signed report pages (Flask).

A delivery is checked before anything else is read: the signature over the raw body (401 when
missing or wrong), then the JSON (400, also when it nests deeper than MAX_JSON_DEPTH, checked
before parsing). It is then routed to the feature routers, which record what they need and
enqueue work for the worker; the answer goes back in milliseconds. Nothing here calls GitHub.

A delivery is one transaction (bot/db.py `unit_of_work`): what the routers record and the
delivery's own row, whose id makes a redelivery a 200 that runs nothing (its transaction rolls
back). Broker messages go out once that has committed. A message that is the only record of
its work (a `/numcheck` command) and cannot be sent makes the answer a 503, with the delivery
forgotten so that GitHub's redelivery runs it; an analysis's wake-up call that cannot be sent
is left to the outbox reaper (bot/outbox.py), its row being committed.

Production: `gunicorn 'bot.web:create_app()'`; locally, `numcheck serve`.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from flask import Flask, Response, jsonify, request
from sqlalchemy import delete, insert
from sqlalchemy.exc import IntegrityError

from bot.db import UnitOfWork, ping, session_scope, unit_of_work, upgrade
from bot.features import Context, routers
from bot.models import Delivery
from bot.report.routes import blueprint as report_pages
from bot.settings import Settings, from_env
from bot.webhooks import (
    MAX_JSON_DEPTH,
    SIGNATURE_HEADER,
    Event,
    dispatch,
    json_too_deep,
    verify_signature,
)
from bot.worker import bind_settings, celery_app

log = logging.getLogger("numcheck.web")
MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB


# Built once (every delivery runs it) and run without the ORM's bookkeeping.
_RECORD_DELIVERY = insert(Delivery.__table__)  # type: ignore[arg-type]  # a Table


class _Duplicate(Exception):
    """The delivery id is already recorded: GitHub redelivered it (or sent it twice at once)."""


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> Flask:
    settings = settings or from_env()
    bind_settings(settings)
    if migrate:
        upgrade(settings.database_url)
    app = Flask("numcheck")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    context = Context(settings)
    feature_routers = routers()
    app.register_blueprint(report_pages(settings))  # signed report pages (bot/report/)

    @app.post("/webhook")
    def webhook() -> tuple[Response, int]:
        started = time.perf_counter()
        body = request.get_data(cache=False)
        if not verify_signature(
            settings.webhook_secret, body, request.headers.get(SIGNATURE_HEADER)
        ):
            return jsonify(error="missing or invalid X-Hub-Signature-256"), 401
        name = request.headers.get("X-GitHub-Event", "")
        delivery = request.headers.get("X-GitHub-Delivery", "")
        if not name or not delivery or len(delivery) > 64:
            return jsonify(error="X-GitHub-Event and X-GitHub-Delivery are required"), 400
        if json_too_deep(body):
            return jsonify(error=f"the body nests JSON deeper than {MAX_JSON_DEPTH} levels"), 400
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return jsonify(error="the body is not JSON"), 400
        except RecursionError:  # json_too_deep misjudged the text; never a 500
            return jsonify(error=f"the body nests JSON deeper than {MAX_JSON_DEPTH} levels"), 400
        if not isinstance(payload, dict):
            return jsonify(error="the body is not a JSON object"), 400
        event = Event(name, delivery, payload)
        unit: UnitOfWork | None = None
        try:
            with unit_of_work(settings.database_url) as unit:
                outcome = "; ".join(route(event))[:2000]
                try:
                    unit.session.connection().execute(
                        _RECORD_DELIVERY,
                        {
                            "id": delivery,
                            "event": name,
                            "action": event.action or "",
                            "outcome": outcome,
                        },
                    )
                except IntegrityError:
                    raise _Duplicate from None
        except _Duplicate:
            return jsonify(status="duplicate delivery", delivery=delivery), 200
        except Exception:
            log.exception("delivery %s (%s) failed", delivery, name)
            if unit is not None and unit.committed:  # recorded, but a message did not go out
                with session_scope(settings.database_url) as s:  # let a redelivery run it
                    s.execute(delete(Delivery).where(Delivery.id == delivery))
            return jsonify(error="could not queue the delivery; redeliver it"), 503
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        return jsonify(status=outcome, delivery=delivery, ms=elapsed), 202

    def route(event: Event) -> list[str]:
        if event.sender_is_bot and event.name not in (
            "installation",
            "installation_repositories",
            "check_run",
            "check_suite",
        ):
            return ["ignored: sent by a bot"]
        return dispatch(feature_routers, event, context) or ["ignored: no handler"]

    @app.get("/healthz")
    def healthz() -> tuple[Response, int]:
        checks: dict[str, Any] = {}
        try:
            ping(settings.database_url)
            checks["database"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            checks["database"] = f"unreachable: {type(exc).__name__}"
        try:
            with celery_app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            checks["broker"] = "ok"
        except Exception as exc:  # noqa: BLE001
            checks["broker"] = f"unreachable: {type(exc).__name__}"
        healthy = all(v == "ok" for v in checks.values())
        return jsonify(status="ok" if healthy else "degraded", **checks), 200 if healthy else 503

    return app
