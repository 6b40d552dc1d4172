"""Engines, sessions and migrations. SQLite by default, PostgreSQL via NUMCHECK_DATABASE_URL.

A webhook delivery is one transaction (`unit_of_work`): every `session_scope` its handlers open
joins it, and what must reach the broker only once the rows are committed is handed to
`after_commit`. Three transactions, and the ORM's bookkeeping around them, were most of
what a delivery cost the web (bench/results/app-ack.txt).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"


@lru_cache(maxsize=8)
def engine_for(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(conn: Any, _record: Any) -> None:  # pragma: no cover - trivial
            cursor = conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: no corruption on a crash, a commit costs no fsync (the webhook
            # answers in milliseconds); a power cut may lose the last deliveries.
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


@lru_cache(maxsize=8)
def _factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(engine_for(url), expire_on_commit=False)


@dataclass
class UnitOfWork:
    url: str
    session: Session
    after: list[Callable[[], None]] = field(default_factory=list)
    committed: bool = False  # set once the transaction is committed, before any callback runs


# The unit of work open in this thread (or task): gthread workers serve one request a thread.
_current: ContextVar[UnitOfWork | None] = ContextVar("numcheck_unit_of_work", default=None)


@contextmanager
def unit_of_work(url: str) -> Iterator[UnitOfWork]:
    """One transaction for everything done inside it: `session_scope(url)` calls join it
    instead of committing on their own, and `after_commit` callbacks run once it has
    committed, in order (none runs if it rolls back). A callback that raises stops the ones
    after it and propagates: the rows are committed by then, so the caller decides what that
    means (the web forgets the delivery so that GitHub's redelivery runs it)."""
    if _current.get() is not None:
        raise RuntimeError("a unit of work is already open in this context")
    unit = UnitOfWork(url, _factory(url)())
    token = _current.set(unit)
    try:
        yield unit
        unit.session.commit()
        unit.committed = True
    except BaseException:
        unit.session.rollback()
        raise
    finally:
        _current.reset(token)
        unit.session.close()
    for callback in unit.after:
        callback()


def after_commit(callback: Callable[[], None]) -> None:
    """Run `callback` once the open unit of work commits; at once when none is open (a worker
    task's own short transactions have committed by the time it sends anything)."""
    unit = _current.get()
    if unit is None:
        callback()
    else:
        unit.after.append(callback)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session committed on success and rolled back on error; inside a `unit_of_work` on the
    same database, that unit's session (flushed here, committed with the unit)."""
    unit = _current.get()
    if unit is not None and unit.url == url:
        yield unit.session
        unit.session.flush()
        return
    session = _factory(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the schema to `revision` (idempotent; concurrent callers take turns: an advisory
    lock on PostgreSQL, a file lock beside a SQLite file)."""
    from alembic import command

    database = make_url(url).database if url.startswith("sqlite") else None
    if not database or database == ":memory:":
        command.upgrade(alembic_config(url), revision)
        return
    fd = os.open(f"{database}.migrate-lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        command.upgrade(alembic_config(url), revision)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def downgrade(url: str, revision: str = "base") -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def ping(url: str) -> None:
    """Raise if the database cannot be reached."""
    with engine_for(url).connect() as conn:
        conn.execute(text("SELECT 1"))
