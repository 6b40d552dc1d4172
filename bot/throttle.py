"""At most one bot reply per user and pull request in a time window.

Anyone can comment `/numcheck ...` on a public pull request, and each reply costs a reaction
and a comment, mutating calls that count against GitHub's secondary rate limits for the whole
installation. So a reply to someone without write access claims a slot for (repository, PR,
user) for `NUMCHECK_COMMAND_REPLY_MINUTES`; further commands in that window are recorded and
left unanswered.

The slot holds the id of the comment that claimed it, so a task retried after a transient
GitHub error (the same comment) still gets to reply. On a Redis broker the slot is a Redis key
with an expiry (`SET NX EX`), shared by every worker host; with the embedded broker
(`numcheck serve`, one host) it is a file beside the broker's messages, read and written under
an flock, as bot/locks.py does.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time

from bot.settings import Settings


def _key(repo: str, number: int, login: str) -> str:
    return f"{repo}#{number}:{login.lower()}"


def claim_reply(settings: Settings, repo: str, number: int, login: str, comment_id: int) -> bool:
    """True when the bot may answer `comment_id` by `login` on this PR: no other comment of
    theirs there was answered within the window (a window of 0 answers everything)."""
    seconds = int(settings.command_reply_minutes * 60)
    if seconds <= 0:
        return True
    key, mine = _key(repo, number, login), str(comment_id)
    if settings.redis_broker:
        import redis

        client = redis.Redis.from_url(settings.broker_url)
        try:
            name = f"{settings.broker_prefix}numcheck:reply:{key}"
            if client.set(name, mine, nx=True, ex=seconds):
                return True
            held = client.get(name)
            if isinstance(held, bytes):
                held = held.decode()
            return held == mine
        finally:
            client.close()
    folder = settings.coordination_folder() / "numcheck-replies"
    folder.mkdir(exist_ok=True)
    path = folder / hashlib.sha256(key.encode()).hexdigest()
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held = os.read(fd, 64).decode(errors="replace")
        fresh = bool(held) and time.time() - os.fstat(fd).st_mtime < seconds
        if fresh and held != mine:
            return False
        if held != mine or not fresh:
            os.ftruncate(fd, 0)
            os.pwrite(fd, mine.encode(), 0)
        return True
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
