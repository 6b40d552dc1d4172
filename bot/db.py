"""Engines, sessions and migrations. SQLite by default, PostgreSQL via NUMCHECK_DATABASE_URL."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session committed on success and rolled back on error."""
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
