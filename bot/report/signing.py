"""Signed, expiring links to report pages: private code must not leak.

A report page shows a PR's code, its failing inputs and its patch, so its URL is the only
credential: an HMAC-SHA256, keyed by the server's NUMCHECK_REPORT_SECRET, over what the link
opens (its scope and subject: an analysis id, a repository's full name) and the link's expiry
(Unix seconds). Nothing else is needed to check it, so the web process keeps no session state;
a tampered, unsigned or expired link is refused. The scope is signed too, so that a link to
one analysis can never be replayed as a link to a repository, or to another analysis.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from datetime import UTC, datetime, timedelta
from typing import Literal
from urllib.parse import urlencode

Scope = Literal["analysis", "repository"]
Verdict = Literal["ok", "unsigned", "invalid", "expired"]
DEFAULT_DAYS = 30.0


def expiry(issued: datetime, days: float) -> int:
    """Unix seconds `days` after `issued` (a naive datetime is UTC, as SQLite returns it).
    Links are dated from what they open, not from the moment they are written, so a retried
    publish writes the very same link and leaves its comments unedited."""
    if issued.tzinfo is None:
        issued = issued.replace(tzinfo=UTC)
    return int((issued + timedelta(days=days)).timestamp())


def signature(secret: bytes, scope: Scope, subject: str, expires: int) -> str:
    message = "\x1f".join(("numcheck-report", scope, subject, str(expires))).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def query(secret: bytes, scope: Scope, subject: str, expires: int) -> str:
    """The query string that opens `subject`: `exp=...&sig=...`."""
    return urlencode({"exp": expires, "sig": signature(secret, scope, subject, expires)})


def verify(
    secret: bytes,
    scope: Scope,
    subject: str,
    expires: str | None,
    sig: str | None,
    now: float | None = None,
) -> Verdict:
    """Is this link good? Compared in constant time; "expired" is only said of a link whose
    signature holds (a forged one learns nothing beyond "invalid")."""
    if not secret or not sig or not expires:
        return "unsigned"
    if not (expires.isascii() and expires.isdigit()) or len(expires) > 12:
        return "invalid"
    expected = signature(secret, scope, subject, int(expires))
    if not hmac.compare_digest(expected.encode("ascii"), sig.encode("utf-8", "replace")):
        return "invalid"
    if int(expires) <= (time.time() if now is None else now):
        return "expired"
    return "ok"
