"""Persistence: what the App has seen and done (SQLAlchemy 2 models; Alembic migrates them).

installations and their repositories come from `installation*` events; deliveries make a
redelivered webhook a no-op; analyses record one run per (repository, PR, head SHA) with its
status, stage timings and result JSON; findings map each fingerprint to the review comment
that carries it, so a re-push edits instead of duplicating.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Installation(Base):
    __tablename__ = "installations"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    account_login: Mapped[str] = mapped_column(String(255), default="")
    account_type: Mapped[str] = mapped_column(String(32), default="")
    repository_selection: Mapped[str] = mapped_column(String(16), default="")
    status: Mapped[str] = mapped_column(String(16), default="active")  # active|suspended|deleted
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )
    repositories: Mapped[list[InstallationRepository]] = relationship(
        back_populates="installation", cascade="all, delete-orphan"
    )


class InstallationRepository(Base):
    __tablename__ = "installation_repositories"
    __table_args__ = (UniqueConstraint("installation_id", "full_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    installation_id: Mapped[int] = mapped_column(ForeignKey("installations.id", ondelete="CASCADE"))
    repo_id: Mapped[int] = mapped_column(BigInteger, default=0)
    full_name: Mapped[str] = mapped_column(String(255))
    installation: Mapped[Installation] = relationship(back_populates="repositories")


class Delivery(Base):
    __tablename__ = "deliveries"
    __table_args__ = (Index("ix_deliveries_received_at", "received_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # X-GitHub-Delivery
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(64), default="")
    outcome: Mapped[str] = mapped_column(Text, default="")
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Analysis(Base):
    __tablename__ = "analyses"
    __table_args__ = (
        Index("ix_analyses_pull", "repo", "pr_number"),
        Index("ix_analyses_head", "repo", "head_sha"),
        Index("ix_analyses_status_updated", "status", "updated_at"),
        Index("ix_analyses_installation_started", "installation_id", "started_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    installation_id: Mapped[int] = mapped_column(BigInteger)
    repo: Mapped[str] = mapped_column(String(255))
    pr_number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    base_sha: Mapped[str] = mapped_column(String(64), default="")
    # queued | running | analysed | published | superseded | cancelled | failed
    status: Mapped[str] = mapped_column(String(16), default="queued")
    reason: Mapped[str] = mapped_column(String(64), default="")  # what asked for it
    delivery_id: Mapped[str] = mapped_column(String(64), default="")
    task_id: Mapped[str] = mapped_column(String(64), default="")
    check_run_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    review_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # What already went out, so a retried publish never repeats it (annotation batches sent,
    # review posted, check run completed).
    publish_state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str] = mapped_column(Text, default="")
    # Deliveries of the analysis task that started on this row and have not ended: a worker
    # process that dies mid-analysis (a native crash) leaves it counted, and the redelivered
    # task gives up past bot.analyses.MAX_DELIVERIES. Zeroed when a delivery ends in Python.
    deliveries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Times the outbox reaper (bot/outbox.py) enqueued this analysis again because it made no
    # progress (a lost message, a dead broker); past bot.analyses.MAX_DELIVERIES it fails instead.
    requeues: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # When a worker took its static stage up (bot/scheduling.py `defer_for_fairness`): the
    # installation served least recently goes next
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )
    findings: Mapped[list[FindingRow]] = relationship(
        back_populates="analysis", cascade="all, delete-orphan"
    )


class FindingRow(Base):
    __tablename__ = "findings"
    __table_args__ = (
        UniqueConstraint("analysis_id", "fingerprint"),
        Index("ix_findings_fingerprint", "fingerprint"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    analysis_id: Mapped[int] = mapped_column(ForeignKey("analyses.id", ondelete="CASCADE"))
    fingerprint: Mapped[str] = mapped_column(String(64))
    path: Mapped[str] = mapped_column(Text)
    line: Mapped[int] = mapped_column(Integer)
    op: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    comment_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    analysis: Mapped[Analysis] = relationship(back_populates="findings")
