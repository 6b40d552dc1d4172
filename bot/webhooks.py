"""Webhook deliveries: signature verification and the event router.

GitHub signs the raw request body with HMAC-SHA256 under the webhook secret and sends
`X-Hub-Signature-256: sha256=<hex>`. The comparison is constant time, and nothing in a
request is trusted (not even its JSON) before it passes.

Each feature module owns a `Router` (in the manner of python/bedevere): handlers register for
an event and optionally actions, and the web layer dispatches a delivery to every router.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

SIGNATURE_HEADER = "X-Hub-Signature-256"
_PREFIX = "sha256="
# GitHub's payloads nest about ten levels; json.loads recurses once per level and raises
# RecursionError near a thousand, which would be an uncaught 500.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")


def signature(secret: bytes, body: bytes) -> str:
    return _PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """True only for a well-formed header whose HMAC matches; constant-time compare."""
    if not header or not header.startswith(_PREFIX):
        return False
    expected = signature(secret, body)
    return hmac.compare_digest(expected.encode("ascii"), header.strip().encode("ascii", "replace"))


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text `body` nests arrays and objects more than `limit` deep.

    Checked on the bytes before parsing, without recursion: string literals are dropped and
    only brackets kept (both in C), then innermost `[]` pairs are removed `limit` times; a
    well-formed document of depth <= limit is then empty. Otherwise the brackets are walked
    once, stopping as soon as the depth passes the limit (the attack: a run of `[`), or goes
    below zero (not JSON at all; json.loads then says so)."""
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKET)
    brackets = brackets.replace(b"{", b"[").replace(b"}", b"]")
    rest = brackets
    for _ in range(limit):
        shorter = rest.replace(b"[]", b"")
        if shorter == rest:
            break
        rest = shorter
    if not rest:
        return False
    depth = 0
    for char in brackets:
        depth += 1 if char == ord("[") else -1
        if depth > limit:
            return True
        if depth < 0:
            return False
    return False


@dataclass
class Event:
    """One verified delivery."""

    name: str  # X-GitHub-Event
    delivery: str  # X-GitHub-Delivery
    payload: dict[str, Any]

    @property
    def action(self) -> str | None:
        action = self.payload.get("action")
        return action if isinstance(action, str) else None

    @property
    def installation_id(self) -> int | None:
        inst = self.payload.get("installation")
        if isinstance(inst, dict) and isinstance(inst.get("id"), int):
            return int(inst["id"])
        return None

    @property
    def repo_full_name(self) -> str | None:
        repo = self.payload.get("repository")
        name = repo.get("full_name") if isinstance(repo, dict) else None
        return name if isinstance(name, str) else None

    @property
    def sender_is_bot(self) -> bool:
        sender = self.payload.get("sender")
        if not isinstance(sender, dict):
            return False
        login = str(sender.get("login", ""))
        return sender.get("type") == "Bot" or login.endswith("[bot]")


# What a handler returns: a short outcome recorded with the delivery ("queued", "ignored: ...").
Handler = Callable[[Event, Any], str | None]


@dataclass
class Router:
    """Handlers keyed by (event, action); action None matches every action."""

    name: str
    _routes: dict[tuple[str, str | None], list[Handler]] = field(default_factory=dict)

    def register(self, event: str, *actions: str) -> Callable[[Handler], Handler]:
        def add(handler: Handler) -> Handler:
            for action in actions or (None,):
                self._routes.setdefault((event, action), []).append(handler)
            return handler

        return add

    def handlers(self, event: Event) -> list[Handler]:
        handlers = list(self._routes.get((event.name, None), []))
        if event.action is not None:
            handlers += self._routes.get((event.name, event.action), [])
        return handlers

    def events(self) -> set[str]:
        return {event for event, _ in self._routes}


def dispatch(routers: Iterable[Router], event: Event, context: Any) -> list[str]:
    """Run every matching handler; returns their outcomes (empty: nobody handles it)."""
    outcomes: list[str] = []
    for router in routers:
        for handler in router.handlers(event):
            outcome = handler(event, context)
            if outcome:
                outcomes.append(outcome)
    return outcomes
