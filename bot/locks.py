"""Serialising mutating GitHub calls per installation (secondary rate limits punish bursts).

On a Redis broker the lock is a Redis lock, shared by every worker host; with the embedded
broker (`numcheck serve`, one host) it is an flock on a file beside the broker's messages.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from bot.settings import Settings

LOCK_TIMEOUT = 600  # a holder that died releases the Redis lock after this


@contextmanager
def installation_lock(settings: Settings, installation_id: int) -> Iterator[None]:
    if settings.redis_broker:
        import redis

        client = redis.Redis.from_url(settings.broker_url)
        lock = client.lock(
            f"{settings.broker_prefix}numcheck:publish:{installation_id}",
            timeout=LOCK_TIMEOUT,
            blocking_timeout=LOCK_TIMEOUT,
        )
        if not lock.acquire():
            raise TimeoutError(f"publish lock for installation {installation_id} not acquired")
        try:
            yield
        finally:
            with suppress(redis.exceptions.LockError):  # expired while held
                lock.release()
            client.close()
        return
    folder = settings.coordination_folder()
    fd = os.open(folder / f"numcheck-publish-{installation_id}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
