"""GitHub asked an installation to wait: a pause shared by every task and worker host.

A secondary rate limit answers 403 (or 429) with `Retry-After`, and GitHub's documentation
asks the client to make no request until that time has passed. The answer reaches one task,
but the limit is the installation's: another PR's task that takes the installation's publish
lock a moment later would call again at once, and each early call can extend the penalty. So
the first task to see the answer records "installation N paused until T", and every call of
every task checks it first (`bot.github.GitHubClient`). A short pause is slept out; a
long one raises `Paused`, a transient error the task retries after the pause, leaving its
worker free for other installations meanwhile.

Storage follows bot/locks.py: a Redis key with an expiry on a Redis broker (shared by every
host), a small file under an flock beside the embedded broker's messages otherwise. A pause
only ever grows: two answers with different `Retry-After`s keep the later end. A Redis that
does not answer is logged and read as "no pause": each task still honours the `Retry-After`
it got itself (bot/tasks.py), and GitHub calls never fail for want of the shared record.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import time
from pathlib import Path
from typing import Any

from bot.settings import Settings

log = logging.getLogger("numcheck.worker")

SLEEP_AT_MOST = 5.0  # a pause shorter than this is slept out inside the call

# SET the key to ARGV[1] (epoch ms) unless it already holds a later time; expire with the pause
_EXTEND = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
"""


class Paused(Exception):
    """The installation is paused for longer than a call should sleep: retry after `seconds`."""

    def __init__(self, installation_id: int, seconds: float) -> None:
        super().__init__(
            f"GitHub asked installation {installation_id} to wait; {seconds:.0f} s remain"
        )
        self.installation_id = installation_id
        self.seconds = seconds


@functools.lru_cache(maxsize=8)
def _redis(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def _key(settings: Settings, installation_id: int) -> str:
    return f"{settings.broker_prefix}numcheck:paused:{installation_id}"


def _file(settings: Settings, installation_id: int) -> Path:
    return settings.coordination_folder() / f"numcheck-paused-{installation_id}"


def pause(settings: Settings, installation_id: int, seconds: float) -> None:
    """Record that GitHub asked this installation to wait `seconds` from now."""
    if seconds <= 0:
        return
    until_ms = int((time.time() + seconds) * 1000)
    if settings.redis_broker:
        try:
            _redis(settings.broker_url).eval(
                _EXTEND, 1, _key(settings, installation_id), until_ms, int(seconds * 1000) + 1000
            )
        except Exception as exc:  # noqa: BLE001 - the task's own backoff still applies
            log.warning(
                "could not record GitHub's pause of installation %s: %s", installation_id, exc
            )
        return
    fd = os.open(_file(settings, installation_id), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held = os.read(fd, 32).decode(errors="replace").strip()
        if not held.isdigit() or int(held) < until_ms:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(until_ms).encode(), 0)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def remaining(settings: Settings, installation_id: int) -> float:
    """Seconds this installation must still wait (0.0 when it may call GitHub)."""
    if settings.redis_broker:
        try:
            held = _redis(settings.broker_url).get(_key(settings, installation_id))
        except Exception as exc:  # noqa: BLE001 - read as no pause
            log.warning("could not read installation %s's pause: %s", installation_id, exc)
            return 0.0
        text = held.decode() if isinstance(held, bytes) else str(held or "")
    else:
        try:
            text = _file(settings, installation_id).read_text().strip()
        except FileNotFoundError:
            return 0.0
    if not text.isdigit():
        return 0.0
    return max(int(text) / 1000 - time.time(), 0.0)


def wait_if_paused(settings: Settings, installation_id: int) -> None:
    """Return when the installation may call GitHub: sleep out a short pause, raise `Paused`
    for a long one."""
    left = remaining(settings, installation_id)
    if left <= 0:
        return
    if left > SLEEP_AT_MOST:
        raise Paused(installation_id, left)
    time.sleep(left)
